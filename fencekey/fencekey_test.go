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

// TestRotate: after a rotation the signer signs with a new key; the keys
// document publishes it first and the replaced key while its grace
// lasts, so a token signed before the rotation still verifies with the
// document a destination fetches after it; another replica loads the
// same new key; a rotation with no grace retires the old keys at once.
func TestRotate(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	s, err := fencekey.Load(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	l := lease.Lease{ID: uuid.New(), ItemID: uuid.New(), ProjectID: uuid.New(), Epoch: 1}
	before, err := s.Sign(l)
	if err != nil {
		t.Fatal(err)
	}
	oldPub := s.PublicKey()
	kid, err := fencekey.Rotate(ctx, pool, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if s.PublicKey().Equal(oldPub) || fence.KeyID(s.PublicKey()) != kid {
		t.Fatalf("after the rotation the signer's key is %s, want the new key %s", fence.KeyID(s.PublicKey()), kid)
	}
	doc := s.Keys()
	if len(doc.Keys) != 2 || doc.Keys[0].KeyID != kid || doc.Keys[1].KeyID != fence.KeyID(oldPub) {
		t.Fatalf("keys document %+v: want the new key, then the old one", doc)
	}
	trusted, err := fence.ParseKeys(mustJSON(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	l.Epoch = 2
	after, err := s.Sign(l)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"before": before, "after": after} {
		if _, err := fence.Verify(trusted, tok); err != nil {
			t.Errorf("the token signed %s the rotation: %v", name, err)
		}
	}
	replica, err := fencekey.Load(ctx, pool)
	if err != nil || !replica.PublicKey().Equal(s.PublicKey()) {
		t.Fatalf("another replica loads another key (%v)", err)
	}

	t.Run("NoGrace", func(t *testing.T) {
		kid, err := fencekey.Rotate(ctx, pool, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Refresh(ctx, pool); err != nil {
			t.Fatal(err)
		}
		doc := s.Keys()
		if len(doc.Keys) != 1 || doc.Keys[0].KeyID != kid {
			t.Fatalf("keys document after a rotation without grace %+v: want only the new key %s", doc, kid)
		}
		trusted, err := fence.ParseKeys(mustJSON(t, doc))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fence.Verify(trusted, after); err == nil {
			t.Fatal("a token of a key retired at once still verifies")
		}
	})

	t.Run("ErrGrace", func(t *testing.T) {
		for _, g := range []time.Duration{-time.Second, fencekey.MaxGrace + time.Second} {
			if _, err := fencekey.Rotate(ctx, pool, g); err == nil {
				t.Errorf("Rotate with grace %s: no error", g)
			}
		}
	})
}
