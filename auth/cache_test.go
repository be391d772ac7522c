package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestTokenCacheGenerations: a read that raced with a drop cannot put its
// stale row back.
func TestTokenCacheGenerations(t *testing.T) {
	t.Parallel()
	var c tokenCache
	now := time.Unix(1000, 0)
	row := dbq.Token{ID: uuid.New()}

	t.Run("DisabledCachesNothing", func(t *testing.T) {
		_, _, gen := c.get(row.ID, now)
		c.put(row, now, gen)
		if _, hit, _ := c.get(row.ID, now); hit {
			t.Fatal("a disabled cache answered")
		}
	})
	c.setEnabled(true)
	t.Run("OK", func(t *testing.T) {
		_, _, gen := c.get(row.ID, now)
		c.put(row, now, gen)
		if _, hit, _ := c.get(row.ID, now); !hit {
			t.Fatal("a cached row was not found")
		}
		if _, hit, _ := c.get(row.ID, now.Add(cacheTTL+time.Second)); hit {
			t.Fatal("an entry older than cacheTTL was used")
		}
	})
	t.Run("RacingDrop", func(t *testing.T) {
		c.drop(row.ID)
		_, _, gen := c.get(row.ID, now) // a request misses and reads the row
		c.drop(row.ID)                  // meanwhile the token is revoked
		c.put(row, now, gen)            // the stale read comes back
		if _, hit, _ := c.get(row.ID, now); hit {
			t.Fatal("a row read before a revocation was cached after it")
		}
	})
}

// TestRevocationReachesOtherReplicas: two services on one database (two
// replicas), each with its listener. A token verified (and cached) on B and
// revoked through A is refused by B as soon as the notification arrives,
// and by A at once.
func TestRevocationReachesOtherReplicas(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	var project uuid.UUID
	if err := pool.QueryRow(ctx, "INSERT INTO projects (name) VALUES ('p') RETURNING id").Scan(&project); err != nil {
		t.Fatal(err)
	}
	a, b := NewService(pool, nil), NewService(pool, nil)
	for _, svc := range []*Service{a, b} {
		r := NewRevocations(svc, nil)
		r.Start(ctx)
		t.Cleanup(r.Stop)
		select {
		case <-r.listening:
		case <-time.After(10 * time.Second):
			t.Fatal("the revocation listener did not start")
		}
	}
	tok, bearer, err := a.Create(ctx, &project, "w", RoleAgent)
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []*Service{a, b} {
		if _, err := svc.Authenticate(ctx, bearer); err != nil {
			t.Fatal(err)
		}
		if _, hit, _ := svc.cache.get(tok.ID, time.Now()); !hit {
			t.Fatal("a verified token was not cached while the listener runs")
		}
	}
	if _, err := a.Revoke(ctx, project, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, bearer); !errors.Is(err, wgerr.Unauthenticated) {
		t.Fatalf("the revoking replica still accepts the token: %v", err)
	}
	// The other replica learns it from the notification: an async effect,
	// so poll with a deadline.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := b.Authenticate(ctx, bearer)
		if errors.Is(err, wgerr.Unauthenticated) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("another replica still accepts a revoked token 5 s later: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCacheOffWithoutListener: with no listener the cache is never used, so
// a revocation written straight into the database takes effect at once.
func TestCacheOffWithoutListener(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	var project uuid.UUID
	if err := pool.QueryRow(ctx, "INSERT INTO projects (name) VALUES ('p') RETURNING id").Scan(&project); err != nil {
		t.Fatal(err)
	}
	svc := NewService(pool, nil)
	r := NewRevocations(svc, nil)
	r.Start(ctx)
	<-r.listening
	r.Stop() // the listener is gone: the cache must be off and empty
	tok, bearer, err := svc.Create(ctx, &project, "w", RoleAgent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, bearer); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE tokens SET revoked_at = now() WHERE id = $1", tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, bearer); !errors.Is(err, wgerr.Unauthenticated) {
		t.Fatalf("a token revoked in the database is still accepted without a listener: %v", err)
	}
}
