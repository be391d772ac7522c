package graph

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// mustLease inserts an active lease on an item directly, the way a claim
// leaves it (the lease package owns claims).
func (f fixture) mustLease(t *testing.T, item uuid.UUID, worker string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	err := f.conn.QueryRow(context.Background(), `
		WITH l AS (
		    INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at)
		    VALUES ($1, $2, 1, $3, 'agent', $4, $4::timestamptz + interval '15 minutes')
		    RETURNING id)
		UPDATE items SET active_lease_id = (SELECT id FROM l), epoch = 1
		WHERE project_id = $1 AND id = $2
		RETURNING active_lease_id`, f.project, item, worker, t0).Scan(&id)
	if err != nil {
		t.Fatalf("mustLease: %v", err)
	}
	return id
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		parent := f.mustItem(t, itemOpts{Title: "parent"})
		epic := f.mustItem(t, itemOpts{Title: "epic", Parent: &parent.ID})
		kid := f.mustItem(t, itemOpts{Title: "kid", Parent: &epic.ID})
		grand := f.mustItem(t, itemOpts{Title: "grand", Parent: &kid.ID})
		doneKid := f.mustItem(t, itemOpts{Title: "done kid", Parent: &epic.ID})
		f.mustFinish(t, doneKid.ID, StatusDone)
		dependent := f.mustItem(t, itemOpts{Title: "dependent", DependsOn: []uuidT{epic.ID}})
		depOnGrand := f.mustItem(t, itemOpts{Title: "waits for grand", DependsOn: []uuidT{grand.ID}})
		leaseID := f.mustLease(t, grand.ID, "worker-7")

		f.clk.Advance(time.Minute)
		got, err := f.svc.Cancel(ctx, f.project, epic.ID, "alice", "not needed")
		if err != nil {
			t.Fatal(err)
		}
		wantState(t, got, StateCancelled)
		for _, id := range []uuidT{kid.ID, grand.ID} {
			it := f.mustGet(t, id)
			wantState(t, it, StateCancelled)
			if it.FinishedAt == nil || !it.FinishedAt.Equal(t0.Add(time.Minute)) || it.ActiveLeaseID != nil {
				t.Fatalf("%s: finished_at %v lease %v", it.Title, it.FinishedAt, it.ActiveLeaseID)
			}
		}
		wantState(t, f.mustGet(t, doneKid.ID), StateDone)
		wantState(t, f.mustGet(t, dependent.ID), StateReady)
		wantState(t, f.mustGet(t, depOnGrand.ID), StateReady)
		wantState(t, f.mustGet(t, parent.ID), StateReady)
		if w := f.mustGet(t, grand.ID).PreviousWorker; w == nil || *w != "worker-7" {
			t.Fatalf("previous_worker %v", w)
		}

		var (
			outcome string
			detail  json.RawMessage
			endedAt time.Time
		)
		err = f.conn.QueryRow(ctx, `SELECT outcome, outcome_detail, ended_at FROM leases WHERE project_id = $1 AND id = $2`,
			f.project, leaseID).Scan(&outcome, &detail, &endedAt)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]string
		json.Unmarshal(detail, &d)
		if outcome != "cancelled" || d["by"] != "alice" || d["reason"] != "not needed" || !endedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("lease outcome %s detail %s ended %v", outcome, detail, endedAt)
		}
		f.checkCounters(t)
	})
	t.Run("ExpiredLeaseEndsExpired", func(t *testing.T) {
		// A lease past its expiry that no one reaped yet gave no rights
		// after expires_at: the cancel ends it as the reaper would have.
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		leaseID := f.mustLease(t, a.ID, "gone")
		f.clk.Advance(time.Hour)
		if _, err := f.svc.Cancel(ctx, f.project, a.ID, "alice", "stale"); err != nil {
			t.Fatal(err)
		}
		var outcome string
		var endedAt, expiresAt time.Time
		err := f.conn.QueryRow(ctx, `SELECT outcome, ended_at, expires_at FROM leases WHERE project_id = $1 AND id = $2`,
			f.project, leaseID).Scan(&outcome, &endedAt, &expiresAt)
		if err != nil {
			t.Fatal(err)
		}
		if outcome != "expired" || !endedAt.Equal(expiresAt) {
			t.Fatalf("lease outcome %s ended %v (expired at %v), want expired at its expiry", outcome, endedAt, expiresAt)
		}
		wantState(t, f.mustGet(t, a.ID), StateCancelled)
	})
	t.Run("ErrConflict", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		if _, err := f.svc.Cancel(ctx, f.project, a.ID, "alice", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Cancel(ctx, f.project, a.ID, "alice", ""); !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("got %v, want conflict", err)
		}
		b := f.mustItem(t, itemOpts{})
		f.mustFinish(t, b.ID, StatusDone)
		if _, err := f.svc.Cancel(ctx, f.project, b.ID, "alice", ""); !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("cancel of done: %v, want conflict", err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		if _, err := f.svc.Cancel(ctx, f.project, newID(), "alice", ""); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("got %v, want not_found", err)
		}
	})
}

func TestUpdateItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ptr := func(s string) *string { return &s }
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{Title: "old"})
		lease := f.mustLease(t, a.ID, "w")
		prio := int32(7)
		labels := []string{"b", "a", "b"}
		v := a.Version
		got, err := f.svc.UpdateItem(ctx, f.project, a.ID, ItemPatch{Title: ptr("  new  "), Priority: &prio, Labels: &labels, IfVersion: &v})
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != "new" || got.Priority != 7 || len(got.Labels) != 2 || got.Version != v+1 {
			t.Fatalf("updated %+v", got)
		}
		if got.ActiveLeaseID == nil || *got.ActiveLeaseID != lease {
			t.Fatal("the edit pre-empted the lease")
		}
		wantState(t, got, StateLeased)
	})
	// An edit whose every field is as stored (a form sent back unchanged,
	// a repeated PATCH) writes nothing: no new version, no item.updated
	// event. It bumped the version and told of a changed title.
	t.Run("OKSameValuesChangeNothing", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		labels := []string{"a"}
		a := f.mustItem(t, itemOpts{Title: "same", Priority: 3, Labels: labels})
		updates := func() int {
			var n int
			if err := f.conn.QueryRow(ctx, `SELECT count(*) FROM events
				WHERE project_id = $1 AND item_id = $2 AND type = 'item.updated'`, f.project, a.ID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		prio := int32(3)
		got, err := f.svc.UpdateItem(ctx, f.project, a.ID, ItemPatch{Title: ptr(" same "), Priority: &prio, Labels: &labels})
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != a.Version || updates() != 0 {
			t.Fatalf("an edit to the stored values: version %d (was %d), %d item.updated events; want no change", got.Version, a.Version, updates())
		}
		got, err = f.svc.UpdateItem(ctx, f.project, a.ID, ItemPatch{Title: ptr("other"), Priority: &prio})
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != "other" || got.Version != a.Version+1 || updates() != 1 {
			t.Fatalf("a real edit: %q version %d (was %d), %d item.updated events; want one", got.Title, got.Version, a.Version, updates())
		}
	})
	t.Run("ErrVersion", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{Title: "old"})
		stale := a.Version
		if _, err := f.svc.UpdateItem(ctx, f.project, a.ID, ItemPatch{Body: ptr("x"), IfVersion: &stale}); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.UpdateItem(ctx, f.project, a.ID, ItemPatch{Title: ptr("lost update"), IfVersion: &stale})
		if !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("got %v, want conflict", err)
		}
		if got := f.mustGet(t, a.ID); got.Title != "old" || got.Body != "x" {
			t.Fatalf("stored %q %q", got.Title, got.Body)
		}
	})
	t.Run("Finished", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		f.mustFinish(t, a.ID, StatusDone)
		if _, err := f.svc.UpdateItem(ctx, f.project, a.ID, ItemPatch{Title: ptr("x")}); !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("title of done item: %v, want conflict", err)
		}
		// What an expired lease would mean no longer applies either.
		if _, err := f.svc.UpdateItem(ctx, f.project, a.ID, ItemPatch{OnExpiry: ptr("reconcile")}); !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("on_expiry of done item: %v, want conflict", err)
		}
		if got := f.mustGet(t, a.ID); got.OnExpiry != nil || got.Version != a.Version {
			t.Fatalf("done item after a refused edit: on_expiry %v, version %d", got.OnExpiry, got.Version)
		}
		labels := []string{"archived"}
		got, err := f.svc.UpdateItem(ctx, f.project, a.ID, ItemPatch{Labels: &labels})
		if err != nil || len(got.Labels) != 1 {
			t.Fatalf("labels of done item: %v %+v", err, got.Labels)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		bad := []string{"has space"}
		meta := json.RawMessage(`[1]`)
		for name, p := range map[string]ItemPatch{
			"EmptyTitle": {Title: ptr(" ")},
			"BadLabel":   {Labels: &bad},
			"Metadata":   {Metadata: &meta},
		} {
			if _, err := f.svc.UpdateItem(ctx, f.project, a.ID, p); !errors.Is(err, wgerr.Invalid) {
				t.Errorf("%s: %v, want invalid_argument", name, err)
			}
		}
		big := string(make([]byte, MaxBodyBytes+1))
		if _, err := f.svc.UpdateItem(ctx, f.project, a.ID, ItemPatch{Body: &big}); !errors.Is(err, wgerr.PayloadTooLarge) {
			t.Errorf("big body: %v", err)
		}
		if got := f.mustGet(t, a.ID); got.Version != a.Version {
			t.Fatalf("version moved to %d", got.Version)
		}
	})
}
