package attention_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// openHoldsBy counts by's open holds on item.
func (f fixture) openHoldsBy(t *testing.T, item uuid.UUID, by string) int {
	t.Helper()
	var n int
	if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM attention_requests
		WHERE project_id = $1 AND item_id = $2 AND reason = 'hold' AND state = 'open' AND requested_by = $3`,
		f.project, item, by).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOneOpenHoldPerPerson: a person holds an item at most once. Hold (the
// API's) sent again by the person who holds the item returns that hold
// and changes nothing, and the database itself refuses a second open hold
// of the same person on the item (a statement that bypasses the service);
// another person's hold, and a hold after the first was dismissed, are
// holds of their own.
func TestOneOpenHoldPerPerson(t *testing.T) {
	t.Parallel()
	f := setupDB(t)
	item := f.item(t, "held once")
	first, err := f.svc.Hold(f.ctx, f.project, item, "", "alice")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("HoldAgain", func(t *testing.T) {
		again, err := f.svc.Hold(f.ctx, f.project, item, "again", "alice")
		if err != nil || again.ID != first.ID {
			t.Fatalf("Hold again = %s, %v; want the first hold %s", again.ID, err, first.ID)
		}
		if n := f.openHoldsBy(t, item, "alice"); n != 1 {
			t.Fatalf("%d open holds of alice, want 1", n)
		}
		if row := f.row(t, item); row.OpenAttention != 1 {
			t.Fatalf("open_attention = %d, want 1", row.OpenAttention)
		}
	})
	t.Run("ErrSecondInDatabase", func(t *testing.T) {
		_, err := f.conn.Exec(f.ctx, `INSERT INTO attention_requests
			(project_id, item_id, source, reason, requested_by, question, blocking, created_at)
			VALUES ($1, $2, 'person', 'hold', 'alice', 'again, past the service', true, now())`, f.project, item)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
			t.Fatalf("a second open hold of alice inserted directly: %v, want a unique violation", err)
		}
	})
	t.Run("OtherPersonAndAfterDismissal", func(t *testing.T) {
		if _, err := f.svc.Hold(f.ctx, f.project, item, "", "bob"); err != nil {
			t.Fatalf("bob's hold: %v", err)
		}
		if _, err := f.svc.Dismiss(f.ctx, f.project, first.ID, "alice", ""); err != nil {
			t.Fatal(err)
		}
		next, err := f.svc.Hold(f.ctx, f.project, item, "", "alice")
		if err != nil || next.ID == first.ID {
			t.Fatalf("alice's hold after dismissing hers: %s, %v; want a new one", next.ID, err)
		}
	})
}

// TestMigration163MergesHolds runs migration 00163 over holds made twice
// before it: of a person's open holds on an item all but the oldest are
// dismissed by the system, each with its attention.dismissed event, and
// leave the item's open_attention, which the remaining holds still count;
// another person's hold stays open. It migrates its own database down and
// up, so it cannot share one.
func TestMigration163MergesHolds(t *testing.T) {
	t.Parallel()
	pool := dbtest.Fresh(t) // migrates the database down and up
	f := setupOn(t, pool)
	item := f.item(t, "held thrice")
	if err := db.MigrateDownTo(f.ctx, pool, 156); err != nil {
		t.Fatal(err)
	}
	pool.Reset()
	hold := func(by string) attention.Request {
		t.Helper()
		r, err := f.svc.Open(f.ctx, f.project, item, attention.NewRequest{Question: "wait", Blocking: true,
			Source: attention.SourcePerson, Reason: attention.ReasonHold, RequestedBy: by})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	oldest := hold("alice")
	hold("alice")
	hold("alice")
	bob := hold("bob")
	if row := f.row(t, item); row.OpenAttention != 4 {
		t.Fatalf("open_attention before = %d, want 4", row.OpenAttention)
	}
	if err := db.Migrate(f.ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	pool.Reset()

	if n := f.openHoldsBy(t, item, "alice"); n != 1 {
		t.Fatalf("%d open holds of alice after the migration, want 1", n)
	}
	for _, r := range []attention.Request{oldest, bob} {
		if got, err := f.svc.Get(f.ctx, f.project, r.ID); err != nil || got.State != attention.StateOpen {
			t.Errorf("hold %s by %s is %v (%v), want open", r.ID, r.RequestedBy, got.State, err)
		}
	}
	if row := f.row(t, item); row.OpenAttention != 2 {
		t.Errorf("open_attention after = %d, want 2 (alice's oldest, bob's)", row.OpenAttention)
	}
	var dismissed int
	if err := pool.QueryRow(f.ctx, `SELECT count(*) FROM events
		WHERE project_id = $1 AND item_id = $2 AND type = 'attention.dismissed' AND actor = 'system'`, f.project, item).Scan(&dismissed); err != nil {
		t.Fatal(err)
	}
	if dismissed != 2 {
		t.Errorf("%d attention.dismissed events by the system, want 2", dismissed)
	}
}
