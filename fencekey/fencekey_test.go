package fencekey_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/fence"
	"github.com/workgraph-dev/workgraph/fencekey"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestLoadOneKeyPerDeployment: replicas starting at once (a fresh
// database: they race on the first insert) all sign with one key, and a
// later start reads the same key back.
func TestLoadOneKeyPerDeployment(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	const replicas = 4
	keys := make([]ed25519.PublicKey, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := fencekey.Load(ctx, pool)
			errs[i] = err
			if err == nil {
				keys[i] = s.PublicKey()
			}
		}()
	}
	wg.Wait()
	for i := range replicas {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		if !keys[i].Equal(keys[0]) {
			t.Fatalf("replica %d signs with another key than replica 0", i)
		}
	}
	again, err := fencekey.Load(ctx, pool)
	if err != nil || !again.PublicKey().Equal(keys[0]) {
		t.Fatalf("a restart loaded another key (%v)", err)
	}

	l := lease.Lease{ID: uuid.New(), ItemID: uuid.New(), ProjectID: uuid.New(), Epoch: 3, ExpiresAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	tok, err := again.Sign(l)
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := fence.ParseKeys(mustJSON(t, again.Keys()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := fence.Verify(trusted, tok)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if c.Lease != l.ID.String() || c.Item != l.ItemID.String() || c.Project != l.ProjectID.String() || c.Epoch != 3 || !c.Expires.Equal(l.ExpiresAt) {
		t.Fatalf("claims %+v do not match lease %+v", c, l)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
