package lease_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/lease"
)

// aggregateStats is WorkerStats computed the slow way, over every lease of
// the project (the query before the counters of migration 00019).
func (f fixture) aggregateStats(t *testing.T) []lease.WorkerStat {
	t.Helper()
	rows, err := f.conn.Query(f.ctx, `
		SELECT worker, coalesce(outcome, ''), count(*)::int,
		       max(greatest(acquired_at, heartbeat_at, ended_at))
		FROM leases WHERE project_id = $1
		GROUP BY worker, outcome ORDER BY worker, outcome`, f.project)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []lease.WorkerStat
	for rows.Next() {
		var worker, outcome string
		var n int
		var last time.Time
		if err := rows.Scan(&worker, &outcome, &n, &last); err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 || out[len(out)-1].Worker != worker {
			out = append(out, lease.WorkerStat{Worker: worker, Outcomes: map[lease.Outcome]int{}})
		}
		w := &out[len(out)-1]
		if outcome == "" {
			w.Active += n
		} else {
			w.Outcomes[lease.Outcome(outcome)] += n
		}
		if last.After(w.LastSeen) {
			w.LastSeen = last
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// endEveryWay ends leases of two workers in every way a lease ends (the
// worker's completion, release and failure, a person's cancel, expiry
// reaped in bulk, a row inserted already ended), leaves one live and
// heartbeats it.
func (f fixture) endEveryWay(t *testing.T) {
	t.Helper()
	for _, w := range []string{"alice-bot", "bob-bot"} {
		_, l := f.claimNew(t, w)
		f.clock.Advance(time.Second)
		if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), json.RawMessage(`{"ok":true}`), nil); err != nil {
			t.Fatal(err)
		}
		_, l = f.claimNew(t, w)
		if _, err := f.leases.Release(f.ctx, f.project, fence(l), ""); err != nil {
			t.Fatal(err)
		}
		_, l = f.claimNew(t, w)
		if _, err := f.leases.Fail(f.ctx, f.project, fence(l), lease.Failure{Message: "boom"}); err != nil {
			t.Fatal(err)
		}
		it, _ := f.claimNew(t, w)
		if _, err := f.graph.Cancel(f.ctx, f.project, it.ID, "person", "not needed"); err != nil {
			t.Fatal(err)
		}
	}
	// Two expiries of each worker, reaped by one statement.
	for range 2 {
		f.claimNew(t, "alice-bot")
		f.claimNew(t, "bob-bot")
	}
	f.clock.Advance(2 * ttl)
	if n, err := f.leases.ReapExpired(f.ctx, f.project, 0); err != nil || n != 4 {
		t.Fatalf("ReapExpired = %d, %v; want 4", n, err)
	}
	// An ended lease inserted as such (an import of history).
	it, _ := f.claimNew(t, "carol-bot")
	if _, err := f.conn.Exec(f.ctx, `
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		VALUES ($1, $2, 100, 'dave-bot', 'import', $3, $3::timestamptz + interval '1 minute', $3::timestamptz + interval '30 seconds', 'released')`,
		f.project, it.ID, f.clock.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, live := f.claimNew(t, "alice-bot")
	f.clock.Advance(time.Second)
	if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(live), lease.Heartbeat{}); err != nil {
		t.Fatal(err)
	}
}

// TestWorkerStatsCounters: the workers page's per-outcome counts, kept by
// triggers when leases end, equal the aggregate over every lease, whatever
// way the leases ended; a heartbeat does not count.
func TestWorkerStatsCounters(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	f.endEveryWay(t)
	got, err := f.leases.WorkerStats(f.ctx, f.project)
	if err != nil {
		t.Fatal(err)
	}
	want := f.aggregateStats(t)
	if len(want) != 4 {
		t.Fatalf("aggregate has %d workers, want 4: %+v", len(want), want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WorkerStats = %+v\nwant (aggregate over leases) %+v", got, want)
	}
	alice := got[0]
	for o, n := range map[lease.Outcome]int{lease.OutcomeCompleted: 1, lease.OutcomeReleased: 1, lease.OutcomeFailed: 1,
		lease.OutcomeCancelled: 1, lease.OutcomeExpired: 2} {
		if alice.Outcomes[o] != n {
			t.Errorf("alice-bot %s = %d, want %d (%+v)", o, alice.Outcomes[o], n, alice)
		}
	}
	if alice.Active != 1 || !alice.LastSeen.Equal(*f.clock.Now()) {
		t.Errorf("alice-bot active %d last seen %v, want 1 and %v (the live lease's heartbeat)", alice.Active, alice.LastSeen, *f.clock.Now())
	}
}

// TestWorkerStatsBackfill: migration 00019 counts the leases that ended
// before it. A new database of its own (setupFresh): it migrates down and
// up again.
func TestWorkerStatsBackfill(t *testing.T) {
	t.Parallel()
	f := setupFresh(t, lease.Config{})
	f.endEveryWay(t)
	want := f.aggregateStats(t)
	if err := db.MigrateDownTo(f.ctx, f.pool, 18); err != nil {
		t.Fatal(err)
	}
	var counters bool
	if err := f.pool.QueryRow(f.ctx, "SELECT to_regclass('worker_outcome_counts') IS NOT NULL").Scan(&counters); err != nil || counters {
		t.Fatalf("before 00019 worker_outcome_counts exists = %v (%v)", counters, err)
	}
	if err := db.Migrate(f.ctx, f.pool, nil); err != nil {
		t.Fatal(err)
	}
	got, err := f.leases.WorkerStats(f.ctx, f.project)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WorkerStats after the backfill = %+v\nwant %+v", got, want)
	}
}

// TestWorkersPageMatchesWorkerStats: paged one worker at a time,
// WorkersPage gives each worker once, in name order, with the counts
// WorkerStats gives for the whole project, and the live leases of exactly
// the page's workers.
func TestWorkersPageMatchesWorkerStats(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	f.endEveryWay(t)
	want, err := f.leases.WorkerStats(f.ctx, f.project)
	if err != nil {
		t.Fatal(err)
	}
	var got []lease.WorkerStat
	cursor := ""
	for range 10 {
		p, err := f.leases.WorkersPage(f.ctx, f.project, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Stats...)
		for _, l := range p.Active {
			if len(p.Stats) != 1 || l.Worker != p.Stats[0].Worker {
				t.Errorf("a live lease of %s on the page of %+v", l.Worker, p.Stats)
			}
		}
		if len(p.Stats) == 1 && len(p.Active) != p.Stats[0].Active {
			t.Errorf("%s: %d live leases answered, %d counted", p.Stats[0].Worker, len(p.Active), p.Stats[0].Active)
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WorkersPage, page by page = %+v\nwant WorkerStats %+v", got, want)
	}
	if _, err := f.leases.WorkersPage(f.ctx, f.project, "bogus", 1); err == nil {
		t.Fatal("a cursor of no list was accepted")
	}
}
