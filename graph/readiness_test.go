package graph

import (
	"context"
	"testing"
	"time"
)

// checkCounters verifies the stored counters of every item of the project
// against a full recount: the incremental maintenance must be exact.
func (f fixture) checkCounters(t *testing.T) {
	t.Helper()
	var bad int
	err := f.conn.QueryRow(context.Background(), `
		SELECT count(*) FROM items i
		WHERE i.project_id = $1 AND (
		    i.unmet_dependencies <> (SELECT count(*) FROM dependencies d
		        JOIN items p ON p.project_id = d.project_id AND p.id = d.depends_on_id
		        WHERE d.project_id = i.project_id AND d.item_id = i.id AND p.status = 'open')
		 OR i.open_children <> (SELECT count(*) FROM items c
		        WHERE c.project_id = i.project_id AND c.parent_id = i.id AND c.status = 'open'))`,
		f.project).Scan(&bad)
	if err != nil {
		t.Fatalf("checkCounters: %v", err)
	}
	if bad != 0 {
		t.Fatalf("%d items have counters that differ from a recount", bad)
	}
}

func TestReadiness(t *testing.T) {
	t.Parallel()
	t.Run("Dependencies", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{Title: "A"})
		b := f.mustItem(t, itemOpts{Title: "B"})
		c := f.mustItem(t, itemOpts{Title: "C", DependsOn: []uuidT{a.ID, b.ID}})
		wantState(t, c, StateBlocked)
		if len(c.BlockedBy.Dependencies) != 2 {
			t.Fatalf("blocked_by %+v", c.BlockedBy)
		}
		f.mustFinish(t, a.ID, StatusDone)
		got := f.mustGet(t, c.ID)
		wantState(t, got, StateBlocked)
		if len(got.BlockedBy.Dependencies) != 1 || got.BlockedBy.Dependencies[0].ID != b.ID {
			t.Fatalf("blocked_by %+v, want only B", got.BlockedBy)
		}
		// A cancelled prerequisite satisfies.
		f.mustFinish(t, b.ID, StatusCancelled)
		got = f.mustGet(t, c.ID)
		wantState(t, got, StateReady)
		if !got.BlockedBy.Empty() {
			t.Fatalf("blocked_by %+v, want empty", got.BlockedBy)
		}
		if !f.counters(t, c.ID).Ready {
			t.Fatal("stored ready is false")
		}
		f.checkCounters(t)
	})
	t.Run("Children", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		p := f.mustItem(t, itemOpts{Title: "P"})
		wantState(t, p, StateReady)
		k1 := f.mustItem(t, itemOpts{Title: "K1", Parent: &p.ID})
		k2 := f.mustItem(t, itemOpts{Title: "K2", Parent: &p.ID})
		got := f.mustGet(t, p.ID)
		wantState(t, got, StateBlocked)
		if len(got.BlockedBy.Children) != 2 {
			t.Fatalf("blocked_by %+v", got.BlockedBy)
		}
		f.mustFinish(t, k1.ID, StatusDone)
		wantState(t, f.mustGet(t, p.ID), StateBlocked)
		f.mustFinish(t, k2.ID, StatusDone)
		got = f.mustGet(t, p.ID)
		wantState(t, got, StateReady)
		if got.Status != StatusOpen {
			t.Fatalf("parent status %s, want open (finished explicitly)", got.Status)
		}
		f.checkCounters(t)
	})
	t.Run("Attention", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		// What attention.Service.Open does: a request row and the counter.
		f.exec(t, `INSERT INTO attention_requests (project_id, item_id, source, requested_by, question, created_at)
			VALUES ($1, $2, 'person', 'alice', 'hold on', now())`, f.project, a.ID)
		f.exec(t, `UPDATE items SET open_attention = open_attention + 1 WHERE project_id = $1 AND id = $2`, f.project, a.ID)
		got := f.mustGet(t, a.ID)
		wantState(t, got, StateAttention)
		if len(got.BlockedBy.Attention) != 1 || got.BlockedBy.Attention[0].Question != "hold on" {
			t.Fatalf("blocked_by %+v", got.BlockedBy)
		}
		if f.counters(t, a.ID).Ready {
			t.Fatal("stored ready is true")
		}
		f.exec(t, `UPDATE items SET open_attention = 0 WHERE project_id = $1 AND id = $2`, f.project, a.ID)
		wantState(t, f.mustGet(t, a.ID), StateReady)
	})
	t.Run("Lease", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		f.exec(t, `UPDATE items SET active_lease_id = gen_random_uuid() WHERE project_id = $1 AND id = $2`, f.project, a.ID)
		wantState(t, f.mustGet(t, a.ID), StateLeased)
		if f.counters(t, a.ID).Ready {
			t.Fatal("stored ready is true")
		}
		// Children added to a leased item do not pre-empt it.
		f.mustItem(t, itemOpts{Parent: &a.ID})
		wantState(t, f.mustGet(t, a.ID), StateLeased)
		f.exec(t, `UPDATE items SET active_lease_id = NULL WHERE project_id = $1 AND id = $2`, f.project, a.ID)
		wantState(t, f.mustGet(t, a.ID), StateBlocked)
	})
	t.Run("NotBefore", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		retry := t0.Add(time.Minute)
		f.exec(t, `UPDATE items SET not_before = $3 WHERE project_id = $1 AND id = $2`, f.project, a.ID, retry)
		got := f.mustGet(t, a.ID)
		wantState(t, got, StateBlocked)
		if got.BlockedBy.RetryAfter == nil || !got.BlockedBy.RetryAfter.Equal(retry) {
			t.Fatalf("retry_after %v, want %v", got.BlockedBy.RetryAfter, retry)
		}
		f.clk.Advance(time.Minute + time.Second)
		got = f.mustGet(t, a.ID)
		wantState(t, got, StateReady)
		if got.BlockedBy.RetryAfter != nil {
			t.Fatalf("retry_after %v after the backoff", got.BlockedBy.RetryAfter)
		}
	})
	t.Run("Reservation", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		until := t0.Add(10 * time.Minute)
		f.exec(t, `UPDATE items SET preferred_worker = 'w1', preferred_until = $3 WHERE project_id = $1 AND id = $2`, f.project, a.ID, until)
		got := f.mustGet(t, a.ID)
		wantState(t, got, StateReady)
		if got.BlockedBy.ReservedFor == nil || *got.BlockedBy.ReservedFor != "w1" || !got.BlockedBy.ReservedUntil.Equal(until) {
			t.Fatalf("blocked_by %+v", got.BlockedBy)
		}
		f.clk.Advance(11 * time.Minute)
		if got := f.mustGet(t, a.ID); got.BlockedBy.ReservedFor != nil {
			t.Fatalf("reservation listed after it expired: %+v", got.BlockedBy)
		}
	})
	t.Run("Precedence", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		b := f.mustItem(t, itemOpts{DependsOn: []uuidT{a.ID}})
		f.exec(t, `UPDATE items SET open_attention = 1 WHERE project_id = $1 AND id = $2`, f.project, b.ID)
		wantState(t, f.mustGet(t, b.ID), StateAttention)
		f.exec(t, `UPDATE items SET active_lease_id = gen_random_uuid() WHERE project_id = $1 AND id = $2`, f.project, b.ID)
		wantState(t, f.mustGet(t, b.ID), StateLeased)
	})
}
