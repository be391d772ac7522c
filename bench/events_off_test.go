package main

import (
	"context"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestEventsOffDisablesEveryEventTrigger: with the triggers off an item's
// creation writes no event, and back on it writes one; a trigger renamed
// in the migrations fails here. A database of its own: ALTER TABLE on the
// shared tables would block every other test.
func TestEventsOffDisablesEveryEventTrigger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.New(t)
	e := &env{pool: pool}
	var project string
	if err := pool.QueryRow(ctx, `INSERT INTO projects (name) VALUES ('off') RETURNING id`).Scan(&project); err != nil {
		t.Fatal(err)
	}
	insert := func() int {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO items (project_id, title, created_by) VALUES ($1, 'x', 'system')`, project); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE project_id = $1`, project).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := e.eventsOff(ctx); err != nil {
		t.Fatal(err)
	}
	if n := insert(); n != 0 {
		t.Fatalf("with the triggers off: %d events", n)
	}
	if err := e.eventsOn(ctx); err != nil {
		t.Fatal(err)
	}
	if n := insert(); n != 1 {
		t.Fatalf("with the triggers on again: %d events, want 1", n)
	}
	var disabled int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgname LIKE '%event%' AND tgenabled = 'D'`).Scan(&disabled); err != nil || disabled != 0 {
		t.Fatalf("%d triggers still disabled (%v)", disabled, err)
	}
}
