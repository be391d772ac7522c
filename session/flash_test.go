package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/session"
)

// TestFlash: a one-time message is read once, by the session and in the
// project it was kept for, and not after FlashTTL; a later one of the same
// key replaces it; the project's expired ones are deleted by the next.
func TestFlash(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	clk := clock.NewStub(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	g := graph.NewService(pool, clk)
	acme, err := g.CreateProject(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	other, err := g.CreateProject(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := auth.NewService(pool, clk).Create(ctx, nil, "person", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	s := session.NewStore(pool, clk)
	mine, _, err := s.Create(ctx, auth.Principal{TokenID: tok.ID})
	if err != nil {
		t.Fatal(err)
	}
	theirs, _, err := s.Create(ctx, auth.Principal{TokenID: tok.ID})
	if err != nil {
		t.Fatal(err)
	}
	take := func(sess string, p graph.Project, key string) (string, bool) {
		t.Helper()
		v, ok, err := s.TakeFlash(ctx, sess, p.ID, key)
		if err != nil {
			t.Fatal(err)
		}
		return v, ok
	}

	t.Run("OK", func(t *testing.T) {
		if err := s.PutFlash(ctx, mine, acme.ID, "secret", "whsec_1"); err != nil {
			t.Fatal(err)
		}
		if v, ok := take(theirs, acme, "secret"); ok {
			t.Fatalf("another session took %q", v)
		}
		if v, ok := take(mine, other, "secret"); ok {
			t.Fatalf("another project took %q", v)
		}
		if v, ok := take(mine, acme, "other-key"); ok {
			t.Fatalf("another key took %q", v)
		}
		if v, ok := take(mine, acme, "secret"); !ok || v != "whsec_1" {
			t.Fatalf("TakeFlash = %q, %v; want whsec_1", v, ok)
		}
		if v, ok := take(mine, acme, "secret"); ok {
			t.Fatalf("taken twice: %q", v)
		}
	})
	t.Run("Replaced", func(t *testing.T) {
		for _, v := range []string{"first", "second"} {
			if err := s.PutFlash(ctx, mine, acme.ID, "replaced", v); err != nil {
				t.Fatal(err)
			}
		}
		if v, ok := take(mine, acme, "replaced"); !ok || v != "second" {
			t.Fatalf("TakeFlash = %q, %v; want the later one", v, ok)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		if err := s.PutFlash(ctx, mine, acme.ID, "late", "whsec_2"); err != nil {
			t.Fatal(err)
		}
		if err := s.PutFlash(ctx, theirs, acme.ID, "unshown", "whsec_3"); err != nil {
			t.Fatal(err)
		}
		later := session.NewStore(pool, clock.NewStub(clk.Now().Add(session.FlashTTL)))
		if v, ok, err := later.TakeFlash(ctx, mine, acme.ID, "late"); ok || err != nil {
			t.Fatalf("TakeFlash at the expiry = %q, %v, %v", v, ok, err)
		}
		// The next flash of the project deletes the one never shown.
		if err := later.PutFlash(ctx, mine, acme.ID, "next", "x"); err != nil {
			t.Fatal(err)
		}
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM web_flashes WHERE project_id = $1 AND key = 'unshown'`, acme.ID).Scan(&left); err != nil || left != 0 {
			t.Fatalf("%d expired flashes left (%v), want 0", left, err)
		}
	})
}
