package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestListenReconnects: notifications arrive; when the listening
// connection is killed, lost is called, Listen connects again, calls
// listening again, and notifications arrive again.
func TestListenReconnects(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan struct{}, 4)
	notes := make(chan string, 4)
	lost := make(chan struct{}, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.Listen(ctx, pool, "wg_test", nil,
			func() { listening <- struct{}{} },
			func(p string) { notes <- p },
			func() { lost <- struct{}{} })
	}()
	t.Cleanup(func() { cancel(); <-done })

	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10 s", what)
		}
	}
	expectNote := func(want string) {
		t.Helper()
		if _, err := pool.Exec(ctx, "SELECT pg_notify('wg_test', $1)", want); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-notes:
			if got != want {
				t.Fatalf("payload %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("notification %q did not arrive", want)
		}
	}

	wait("LISTEN", listening)
	expectNote("one")
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	wait("report of the lost connection", lost)
	wait("LISTEN after reconnecting", listening)
	expectNote("two")
}
