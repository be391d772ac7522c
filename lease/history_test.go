package lease_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestHistoryImmutable: the database itself refuses to rewrite history.
func TestHistoryImmutable(t *testing.T) {
	t.Parallel()
	// Its own database: the refused statements would abort a test
	// transaction, and TRUNCATE locks the table against every other test.
	f := setupDB(t, lease.Config{})
	_, ended := f.claimNew(t, "w")
	if _, err := f.leases.Complete(f.ctx, f.project, fence(ended), json.RawMessage(`{"ok":true}`), nil); err != nil {
		t.Fatal(err)
	}
	_, active := f.claimNew(t, "w")
	f.clock.Advance(ttl)
	if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(active), lease.Heartbeat{}); err == nil {
		t.Fatal("heartbeat after expiry accepted")
	}
	// Record a refusal so that lease_observations has a row.
	if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(ended), lease.Heartbeat{}); !errors.Is(err, wgerr.LeaseLost) {
		t.Fatal(err)
	}

	refused := map[string]string{
		"update ended outcome": "UPDATE leases SET outcome = 'failed' WHERE id = $1",
		"update ended result":  "UPDATE leases SET result = '{}' WHERE id = $1",
		"reopen ended":         "UPDATE leases SET ended_at = NULL, outcome = NULL, result = NULL WHERE id = $1",
		"extend ended":         "UPDATE leases SET expires_at = expires_at + interval '1 day' WHERE id = $1",
		"delete ended":         "DELETE FROM leases WHERE id = $1",
		"update observation":   "UPDATE lease_observations SET operation = 'x' WHERE lease_id = $1",
		"delete observation":   "DELETE FROM lease_observations WHERE lease_id = $1",
	}
	for name, stmt := range refused {
		t.Run(name, func(t *testing.T) {
			_, err := f.conn.Exec(f.ctx, stmt, ended.ID)
			if code := pgCode(err); code != "WG001" {
				t.Fatalf("%q: err = %v, want refused by the history trigger", stmt, err)
			}
		})
	}
	activeRefused := map[string]string{
		"change epoch":    "UPDATE leases SET epoch = epoch + 1 WHERE id = $1",
		"change worker":   "UPDATE leases SET worker = 'someone-else' WHERE id = $1",
		"change item":     "UPDATE leases SET item_id = gen_random_uuid() WHERE id = $1",
		"change acquired": "UPDATE leases SET acquired_at = acquired_at - interval '1 hour' WHERE id = $1",
		"delete active":   "DELETE FROM leases WHERE id = $1",
	}
	for name, stmt := range activeRefused {
		t.Run(name, func(t *testing.T) {
			_, err := f.conn.Exec(f.ctx, stmt, active.ID)
			if code := pgCode(err); code != "WG001" {
				t.Fatalf("%q on an active lease: err = %v, want refused by the history trigger", stmt, err)
			}
		})
	}
	for _, table := range []string{"leases", "lease_observations"} {
		if _, err := f.conn.Exec(f.ctx, "TRUNCATE "+table+" CASCADE"); pgCode(err) != "WG001" {
			t.Errorf("TRUNCATE %s: err = %v, want refused", table, err)
		}
	}
	if got := f.getLease(t, ended.ID); *got.Outcome != lease.OutcomeCompleted || string(got.Result) != `{"ok": true}` {
		t.Fatalf("ended lease = %+v", got)
	}
	// A second end of the same lease is refused by the fence, and by the
	// trigger if issued directly.
	if _, err := f.leases.Release(f.ctx, f.project, fence(ended), ""); !errors.Is(err, wgerr.LeaseLost) {
		t.Fatalf("second end: err = %v", err)
	}
	// A second active lease on one item is refused by the unique index.
	_, err := f.conn.Exec(f.ctx, `INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at)
		SELECT project_id, item_id, epoch + 100, 'intruder', 'x', now(), now() + interval '1 hour' FROM leases WHERE id = $1`, active.ID)
	if pgCode(err) != "23505" {
		t.Fatalf("a second active lease on one item: err = %v, want a unique violation", err)
	}
}

func TestHistoryQueries(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	it, l1 := f.claimNew(t, "alice-bot")
	if _, err := f.leases.Release(f.ctx, f.project, fence(l1), ""); err != nil {
		t.Fatal(err)
	}
	t1 := *f.clock.Now()
	f.clock.Advance(time.Minute)
	c2, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "bob-bot", Labels: it.Labels})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.Complete(f.ctx, f.project, fence(c2.Lease), nil, nil); err != nil {
		t.Fatal(err)
	}
	_, l3 := f.claimNew(t, "bob-bot")

	t.Run("All", func(t *testing.T) {
		var ids []string
		cursor := ""
		for {
			page, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Cursor: cursor, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range page.Leases {
				ids = append(ids, l.ID.String())
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		want := []string{l1.ID.String(), c2.Lease.ID.String(), l3.ID.String()}
		if len(ids) != 3 || ids[0] != want[0] || ids[1] != want[1] || ids[2] != want[2] {
			t.Fatalf("history %v, want %v", ids, want)
		}
	})
	filters := map[string]struct {
		f    lease.HistoryFilter
		want int
	}{
		"ByItem":       {lease.HistoryFilter{ItemID: &it.ID}, 2},
		"ByWorker":     {lease.HistoryFilter{Worker: "bob-bot"}, 2},
		"ByOutcome":    {lease.HistoryFilter{Outcome: ptr(lease.OutcomeCompleted)}, 1},
		"Since":        {lease.HistoryFilter{Since: ptr(t1.Add(time.Second))}, 2},
		"Until":        {lease.HistoryFilter{Until: ptr(t1.Add(time.Second))}, 1},
		"WorkerAndRng": {lease.HistoryFilter{Worker: "alice-bot", Since: ptr(t1.Add(time.Second))}, 0},
	}
	for name, tc := range filters {
		t.Run(name, func(t *testing.T) {
			page, err := f.leases.History(f.ctx, f.project, tc.f)
			if err != nil || len(page.Leases) != tc.want {
				t.Fatalf("got %d leases (%v), want %d", len(page.Leases), err, tc.want)
			}
		})
	}
	t.Run("ErrOutcome", func(t *testing.T) {
		_, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Outcome: ptr(lease.Outcome("won"))})
		if !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrCursor", func(t *testing.T) {
		_, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Cursor: "zzz"})
		if !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("Active", func(t *testing.T) {
		active, err := f.leases.Active(f.ctx, f.project)
		if err != nil || len(active) != 1 || active[0].ID != l3.ID {
			t.Fatalf("active = %+v, %v", active, err)
		}
	})
	t.Run("WorkerStats", func(t *testing.T) {
		stats, err := f.leases.WorkerStats(f.ctx, f.project)
		if err != nil || len(stats) != 2 {
			t.Fatalf("stats = %+v, %v", stats, err)
		}
		alice, bob := stats[0], stats[1]
		if alice.Worker != "alice-bot" || alice.Active != 0 || alice.Outcomes[lease.OutcomeReleased] != 1 ||
			bob.Active != 1 || bob.Outcomes[lease.OutcomeCompleted] != 1 || !bob.LastSeen.Equal(*f.clock.Now()) {
			t.Fatalf("stats = %+v", stats)
		}
	})
	t.Run("Holder", func(t *testing.T) {
		p, token, err := f.leases.Holder(f.ctx, l3.ID)
		if err != nil || p != f.project || !sameToken(token, l3.TokenID) {
			t.Fatalf("Holder = %v, %v, %v; want project %v, token %v", p, token, err, f.project, l3.TokenID)
		}
		if _, _, err := f.leases.Holder(f.ctx, uuid.New()); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("Holder of an unknown lease: %v", err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func sameToken(a, b *uuid.UUID) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
