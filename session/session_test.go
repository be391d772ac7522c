package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/session"
)

func TestStore(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx := context.Background()
	clk := clock.NewStub(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	authSvc := auth.NewService(pool, clk)
	tok, _, err := authSvc.Create(ctx, nil, "person", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	p := auth.Principal{TokenID: tok.ID}
	s := session.NewStore(pool, clk)

	id, expires, err := s.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(session.TTL); !expires.Equal(want) {
		t.Fatalf("expires %s, want %s", expires, want)
	}
	var stored int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM web_sessions WHERE id_hash = sha256($1::bytea)`, []byte(id)).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("%d sessions stored under the id's hash (%v)", stored, err)
	}

	t.Run("OK", func(t *testing.T) {
		got, ok, err := s.Lookup(ctx, id)
		if err != nil || !ok || got.Principal.TokenID != tok.ID || got.Principal.Role != auth.RoleAdmin || got.Principal.Name != "person" {
			t.Fatalf("Lookup = %+v, %v, %v", got, ok, err)
		}
	})
	t.Run("Unknown", func(t *testing.T) {
		for _, bad := range []string{"", "no-such-session", string(make([]byte, 200))} {
			if _, ok, err := s.Lookup(ctx, bad); ok || err != nil {
				t.Fatalf("Lookup(%q) = %v, %v", bad, ok, err)
			}
		}
	})
	t.Run("Expired", func(t *testing.T) {
		later := session.NewStore(pool, clock.NewStub(expires))
		if _, ok, err := later.Lookup(ctx, id); ok || err != nil {
			t.Fatalf("Lookup at the expiry = %v, %v", ok, err)
		}
	})
	t.Run("End", func(t *testing.T) {
		id2, _, err := s.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.End(ctx, id2); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Lookup(ctx, id2); ok || err != nil {
			t.Fatalf("Lookup after End = %v, %v", ok, err)
		}
	})
}
