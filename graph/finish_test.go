package graph

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestFinish: finishing an item (finishItems, as a completion's release and
// Cancel use it) makes its dependents and parent ready exactly when their
// last blocker goes; items that are not open, or not there, are left alone.
func TestFinish(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{Title: "A"})
		b := f.mustItem(t, itemOpts{Title: "B", DependsOn: []uuidT{a.ID}})
		parent := f.mustItem(t, itemOpts{Title: "P"})
		c := f.mustItem(t, itemOpts{Title: "C", Parent: &parent.ID, DependsOn: []uuidT{a.ID}})
		wantState(t, f.mustGet(t, b.ID), StateBlocked)
		wantState(t, f.mustGet(t, parent.ID), StateBlocked)
		if got := f.mustGet(t, b.ID).BlockedBy.Dependencies; len(got) != 1 || got[0].ID != a.ID {
			t.Fatalf("B blocked_by.dependencies = %+v, want [A]", got)
		}

		f.mustFinish(t, a.ID, StatusDone)
		gotA := f.mustGet(t, a.ID)
		wantState(t, gotA, StateDone)
		if string(gotA.Result) != `{"ok": true}` || gotA.FinishedAt == nil || !gotA.FinishedAt.Equal(t0) {
			t.Fatalf("A result %s finished_at %v", gotA.Result, gotA.FinishedAt)
		}
		wantState(t, f.mustGet(t, b.ID), StateReady)
		wantState(t, f.mustGet(t, c.ID), StateReady)
		wantState(t, f.mustGet(t, parent.ID), StateBlocked)

		f.mustFinish(t, c.ID, StatusCancelled)
		p := f.mustGet(t, parent.ID)
		wantState(t, p, StateReady) // ready again, not done
		if p.Status != StatusOpen {
			t.Fatalf("parent status %s, want open", p.Status)
		}
		if c := f.counters(t, parent.ID); c.Children != 0 || !c.Ready {
			t.Fatalf("parent counters %+v", c)
		}
	})
	t.Run("NotOpenLeftAlone", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		b := f.mustItem(t, itemOpts{DependsOn: []uuidT{a.ID}})
		f.mustFinish(t, a.ID, StatusDone)
		var n int
		err := db.InTx(context.Background(), f.conn, func(tx pgx.Tx) error {
			var err error
			n, err = finishItems(context.Background(), tx, f.clk.Now(), f.project, []uuidT{a.ID, newID()}, StatusCancelled, nil)
			return err
		})
		if err != nil || n != 0 {
			t.Fatalf("finished %d (%v), want 0: one is done, one does not exist", n, err)
		}
		if got := f.mustGet(t, a.ID); got.Status != StatusDone {
			t.Fatalf("status %s, want done", got.Status)
		}
		if c := f.counters(t, b.ID); c.Unmet != 0 || !c.Ready {
			t.Fatalf("dependent counters %+v: released twice or not at all", c)
		}
		f.checkCounters(t)
	})
}

func TestCreateChildren(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		parent := f.mustItem(t, itemOpts{Title: "epic"})
		var kids []Item
		err := db.InTx(context.Background(), f.conn, func(tx pgx.Tx) error {
			var err error
			kids, err = f.svc.On(tx).CreateChildren(context.Background(), f.project, parent.ID, []NewChild{
				{Key: "design", Title: "Design"},
				{Key: "build", Title: "Build", DependsOnKeys: []string{"design"}},
				{Key: "test", Title: "Test", DependsOnKeys: []string{"build", "design"}},
			}, "agent-1")
			return err
		})
		if err != nil {
			t.Fatalf("CreateChildren: %v", err)
		}
		if len(kids) != 3 || kids[0].Title != "Design" || kids[2].Title != "Test" {
			t.Fatalf("children %+v", kids)
		}
		wantState(t, kids[0], StateReady)
		wantState(t, kids[1], StateBlocked)
		if c := f.counters(t, kids[2].ID); c.Unmet != 2 {
			t.Fatalf("test counters %+v, want 2 unmet", c)
		}
		p := f.mustGet(t, parent.ID)
		wantState(t, p, StateBlocked)
		if len(p.BlockedBy.Children) != 3 {
			t.Fatalf("parent blocked_by.children %+v", p.BlockedBy.Children)
		}
		for _, k := range kids {
			if k.ParentID == nil || *k.ParentID != parent.ID || k.CreatedBy != "agent-1" {
				t.Fatalf("child %+v", k)
			}
			f.mustFinish(t, k.ID, StatusDone)
		}
		wantState(t, f.mustGet(t, parent.ID), StateReady)
	})
	t.Run("RequiresTouches", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		parent := f.mustItem(t, itemOpts{Title: "epic"})
		var kids []Item
		err := db.InTx(context.Background(), f.conn, func(tx pgx.Tx) error {
			var err error
			kids, err = f.svc.On(tx).CreateChildren(context.Background(), f.project, parent.ID, []NewChild{
				{Key: "schema", Title: "Schema", Requires: []string{"db-migrations", "go", "go"}, Touches: []string{"db:schema", "repo:db/**"}},
				{Key: "plain", Title: "Plain"},
			}, "agent-1")
			return err
		})
		if err != nil {
			t.Fatalf("CreateChildren: %v", err)
		}
		got := f.mustGet(t, kids[0].ID)
		if !slices.Equal(got.Requires, []string{"db-migrations", "go"}) || !slices.Equal(got.Touches, []string{"db:schema", "repo:db/**"}) {
			t.Fatalf("stored requires %v touches %v, want the child's (duplicates dropped)", got.Requires, got.Touches)
		}
		if plain := f.mustGet(t, kids[1].ID); len(plain.Requires) != 0 || len(plain.Touches) != 0 {
			t.Fatalf("a child without requires or touches stored %v %v", plain.Requires, plain.Touches)
		}
	})
	t.Run("ErrCycle", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		parent := f.mustItem(t, itemOpts{})
		err := db.InTx(context.Background(), f.conn, func(tx pgx.Tx) error {
			_, err := f.svc.On(tx).CreateChildren(context.Background(), f.project, parent.ID, []NewChild{
				{Key: "a", Title: "A", DependsOnKeys: []string{"c"}},
				{Key: "b", Title: "B", DependsOnKeys: []string{"a"}},
				{Key: "c", Title: "C", DependsOnKeys: []string{"b"}},
			}, "agent-1")
			return err
		})
		var ce *CycleError
		if !errors.As(err, &ce) || !errors.Is(err, wgerr.DependencyCycle) {
			t.Fatalf("got %v, want a cycle error", err)
		}
		if len(ce.Cycle) != 4 || ce.Keys[0] != ce.Keys[3] {
			t.Fatalf("cycle %v keys %v", ce.Cycle, ce.Keys)
		}
		if wgerr.CodeOf(err) != wgerr.CodeDependencyCycle {
			t.Fatalf("code %s", wgerr.CodeOf(err))
		}
		if c := f.counters(t, parent.ID); c.Children != 0 {
			t.Fatalf("parent counters changed: %+v", c)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		parent := f.mustItem(t, itemOpts{})
		for name, kids := range map[string][]NewChild{
			"DuplicateKey": {{Key: "a", Title: "A"}, {Key: "a", Title: "B"}},
			"EmptyKey":     {{Key: " ", Title: "A"}},
			"UnknownKey":   {{Key: "a", Title: "A", DependsOnKeys: []string{"zz"}}},
			"EmptyTitle":   {{Key: "a", Title: "  "}},
			"None":         {},
		} {
			err := db.InTx(context.Background(), f.conn, func(tx pgx.Tx) error {
				_, err := f.svc.On(tx).CreateChildren(context.Background(), f.project, parent.ID, kids, "x")
				return err
			})
			if !errors.Is(err, wgerr.Invalid) {
				t.Errorf("%s: got %v, want invalid_argument", name, err)
			}
		}
		// requires and touches are checked as an item's are, the field
		// naming the child.
		for field, kids := range map[string][]NewChild{
			"children[1].requires": {{Key: "a", Title: "A"}, {Key: "b", Title: "B", Requires: []string{"no spaces"}}},
			"children[0].touches":  {{Key: "a", Title: "A", Touches: []string{"repo:../etc"}}},
			"children[0].labels":   {{Key: "a", Title: "A", Labels: []string{""}}},
		} {
			err := db.InTx(context.Background(), f.conn, func(tx pgx.Tx) error {
				_, err := f.svc.On(tx).CreateChildren(context.Background(), f.project, parent.ID, kids, "x")
				return err
			})
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != field {
				t.Errorf("got %v, want invalid_argument naming %s", err, field)
			}
		}
		if c := f.counters(t, parent.ID); c.Children != 0 {
			t.Fatalf("refused children changed the parent: %+v", c)
		}
	})
	t.Run("ErrParentDone", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		parent := f.mustItem(t, itemOpts{})
		f.mustFinish(t, parent.ID, StatusDone)
		err := db.InTx(context.Background(), f.conn, func(tx pgx.Tx) error {
			_, err := f.svc.On(tx).CreateChildren(context.Background(), f.project, parent.ID, []NewChild{{Key: "a", Title: "A"}}, "x")
			return err
		})
		if !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("got %v, want conflict", err)
		}
	})
}
