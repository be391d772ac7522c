package attention_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestHoldOnce: a person's second hold on an item returns the first and
// changes nothing, also when both arrive at once (each waits on the item's
// lock before it looks); another person's is a hold of its own, and Hold
// (the API's) returns the person's open hold too. (Its own database: the presses at
// once run in transactions of their own.)
func TestHoldOnce(t *testing.T) {
	t.Parallel()
	f := setupDB(t)
	openHolds := func(item uuid.UUID) int {
		t.Helper()
		var n int
		if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM attention_requests
			WHERE project_id = $1 AND item_id = $2 AND reason = 'hold' AND state = 'open'`, f.project, item).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("OK", func(t *testing.T) {
		item := f.item(t, "x")
		first, created, err := f.svc.HoldOnce(f.ctx, f.project, item, "", "alice")
		if err != nil || !created {
			t.Fatalf("first hold: created %v, %v", created, err)
		}
		again, created, err := f.svc.HoldOnce(f.ctx, f.project, item, "again", "alice")
		if err != nil || created || again.ID != first.ID {
			t.Fatalf("second hold: %s, created %v, %v; want the first (%s), not created", again.ID, created, err, first.ID)
		}
		if row := f.row(t, item); row.OpenAttention != 1 {
			t.Fatalf("open_attention = %d, want 1", row.OpenAttention)
		}
		if _, created, err := f.svc.HoldOnce(f.ctx, f.project, item, "", "bob"); err != nil || !created {
			t.Fatalf("another person's hold: created %v, %v", created, err)
		}
		if again, err := f.svc.Hold(f.ctx, f.project, item, "", "alice"); err != nil || again.ID != first.ID {
			t.Fatalf("Hold by alice again = %s, %v; want her first hold %s", again.ID, err, first.ID)
		}
		if n := openHolds(item); n != 2 {
			t.Fatalf("%d open holds, want 2 (alice's, bob's; Hold by alice again is hers)", n)
		}
	})
	t.Run("AtOnce", func(t *testing.T) {
		item := f.item(t, "y")
		// Hold the item's lock while two presses start, so both wait.
		tx, err := f.conn.Begin(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(f.ctx)
		if _, err := tx.Exec(f.ctx, "SELECT 1 FROM items WHERE project_id = $1 AND id = $2 FOR UPDATE", f.project, item); err != nil {
			t.Fatal(err)
		}
		results := make(chan bool, 2)
		for range 2 {
			go func() {
				_, created, err := f.svc.HoldOnce(f.ctx, f.project, item, "", "alice")
				results <- err == nil && created
			}()
		}
		// Both are waiting on a lock (polling, with a bound; nothing is timed).
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			var waiting int
			if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d presses wait on the item's lock, want 2", waiting)
			}
		}
		if err := tx.Rollback(f.ctx); err != nil {
			t.Fatal(err)
		}
		createdN := 0
		for range 2 {
			if <-results {
				createdN++
			}
		}
		if n := openHolds(item); createdN != 1 || n != 1 {
			t.Fatalf("two presses at once: %d created, %d open holds; want 1 and 1", createdN, n)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, _, err := f.svc.HoldOnce(f.ctx, f.project, uuid.New(), "", "alice"); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("err = %v, want not_found", err)
		}
	})
}
