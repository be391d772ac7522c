package graph

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestAddDependency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a, b := f.mustItem(t, itemOpts{Title: "A"}), f.mustItem(t, itemOpts{Title: "B"})
		if err := f.svc.AddDependency(ctx, f.project, b.ID, a.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		wantState(t, f.mustGet(t, b.ID), StateBlocked)
		f.checkCounters(t)
	})
	t.Run("OnFinishedIsSatisfied", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a, b := f.mustItem(t, itemOpts{}), f.mustItem(t, itemOpts{})
		f.mustFinish(t, a.ID, StatusCancelled)
		if err := f.svc.AddDependency(ctx, f.project, b.ID, a.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		wantState(t, f.mustGet(t, b.ID), StateReady)
		n, err := f.svc.Neighbourhood(ctx, f.project, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Dependencies) != 1 || n.Dependencies[0].State != StateCancelled {
			t.Fatalf("dependencies %+v, want A shown as cancelled", n.Dependencies)
		}
		f.checkCounters(t)
	})
	t.Run("ErrFinishedItem", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a, b := f.mustItem(t, itemOpts{}), f.mustItem(t, itemOpts{})
		f.mustFinish(t, b.ID, StatusDone)
		if err := f.svc.AddDependency(ctx, f.project, b.ID, a.ID, "alice"); !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("got %v, want invalid_argument", err)
		}
	})
	t.Run("ErrDuplicate", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		b := f.mustItem(t, itemOpts{DependsOn: []uuidT{a.ID}})
		if err := f.svc.AddDependency(ctx, f.project, b.ID, a.ID, "alice"); !errors.Is(err, wgerr.AlreadyExists) {
			t.Fatalf("got %v, want already_exists", err)
		}
		if c := f.counters(t, b.ID); c.Unmet != 1 {
			t.Fatalf("unmet %d, want 1", c.Unmet)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		if err := f.svc.AddDependency(ctx, f.project, a.ID, newID(), "alice"); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("missing prerequisite: %v", err)
		}
		if err := f.svc.AddDependency(ctx, f.project, newID(), a.ID, "alice"); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("missing item: %v", err)
		}
		other := setup(t)
		b := other.mustItem(t, itemOpts{})
		if err := f.svc.AddDependency(ctx, f.project, a.ID, b.ID, "alice"); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("item of another project: %v", err)
		}
	})
	t.Run("ErrSelf", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		// An item that waits for itself is a cycle of one.
		err := f.svc.AddDependency(ctx, f.project, a.ID, a.ID, "alice")
		var ce *CycleError
		if !errors.As(err, &ce) || len(ce.Cycle) != 2 || ce.Cycle[0].ID != a.ID || ce.Cycle[1].ID != a.ID {
			t.Fatalf("got %v, want a dependency cycle %s -> %s", err, a.ID, a.ID)
		}
	})
}

func TestCycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("ErrDependencyCycle", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{Title: "A"})
		b := f.mustItem(t, itemOpts{Title: "B", DependsOn: []uuidT{a.ID}})
		c := f.mustItem(t, itemOpts{Title: "C", DependsOn: []uuidT{b.ID}})
		err := f.svc.AddDependency(ctx, f.project, a.ID, c.ID, "alice")
		var ce *CycleError
		if !errors.As(err, &ce) || !errors.Is(err, wgerr.DependencyCycle) {
			t.Fatalf("got %v, want a cycle", err)
		}
		want := `dependency cycle: "A" (` + a.ID.String() + `) -> "C" (` + c.ID.String() + `) -> "B" (` + b.ID.String() + `) -> "A" (` + a.ID.String() + `)`
		if err.Error() != want {
			t.Fatalf("message\n %s\nwant\n %s", err, want)
		}
		var we *wgerr.Error
		if !errors.As(err, &we) || we.Code != wgerr.CodeDependencyCycle {
			t.Fatalf("wgerr form %+v", we)
		}
		if ids, _ := we.Details["cycle"].([]string); len(ids) != 4 || ids[0] != a.ID.String() {
			t.Fatalf("details %+v", we.Details)
		}
		if c := f.counters(t, a.ID); c.Unmet != 0 {
			t.Fatalf("A gained a dependency: %+v", c)
		}
		var edges int
		f.conn.QueryRow(ctx, `SELECT count(*) FROM dependencies WHERE project_id = $1`, f.project).Scan(&edges)
		if edges != 2 {
			t.Fatalf("%d edges stored, want 2", edges)
		}
	})
	t.Run("ErrThroughParent", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		epic := f.mustItem(t, itemOpts{Title: "Epic"})
		kid := f.mustItem(t, itemOpts{Title: "Kid", Parent: &epic.ID})
		// The kid waiting for its own parent: the parent waits for the kid.
		err := f.svc.AddDependency(ctx, f.project, kid.ID, epic.ID, "alice")
		var ce *CycleError
		if !errors.As(err, &ce) {
			t.Fatalf("got %v, want a cycle", err)
		}
		if len(ce.Cycle) != 3 || ce.Cycle[0].ID != kid.ID || ce.Cycle[1].ID != epic.ID || ce.Cycle[2].ID != kid.ID {
			t.Fatalf("cycle %+v", ce.Cycle)
		}
		// Through a dependency and a grandchild: X depends on Epic's grandchild's ... and Epic depends on X.
		other := f.mustItem(t, itemOpts{Title: "Other"})
		grand := f.mustItem(t, itemOpts{Title: "Grand", Parent: &kid.ID, DependsOn: []uuidT{other.ID}})
		err = f.svc.AddDependency(ctx, f.project, other.ID, epic.ID, "alice")
		if !errors.As(err, &ce) {
			t.Fatalf("got %v, want a cycle", err)
		}
		if !strings.Contains(err.Error(), `"Other"`) || !strings.Contains(err.Error(), `"Grand"`) || len(ce.Cycle) != 5 {
			t.Fatalf("cycle %v", err)
		}
		_ = grand
		// A child created with a dependency on its own ancestor's waiter.
		_, err = f.svc.CreateItem(ctx, f.project, NewItem{Title: "New", ParentID: &kid.ID, DependsOn: []uuidT{epic.ID}, CreatedBy: "x"})
		if !errors.As(err, &ce) || len(ce.Cycle) != 4 || ce.Cycle[0].Title != "New" {
			t.Fatalf("create with cycle: %v", err)
		}
		f.checkCounters(t)
	})
	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		f := setupDB(t) // concurrent transactions

		const pairs = 50
		type pair struct{ a, b Item }
		ps := make([]pair, pairs)
		for i := range ps {
			ps[i] = pair{f.mustItem(t, itemOpts{}), f.mustItem(t, itemOpts{})}
		}
		errs := make([][2]error, pairs)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range ps {
			for j := 0; j < 2; j++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if j == 0 {
						errs[i][j] = f.svc.AddDependency(ctx, f.project, ps[i].a.ID, ps[i].b.ID, "w")
					} else {
						errs[i][j] = f.svc.AddDependency(ctx, f.project, ps[i].b.ID, ps[i].a.ID, "w")
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		for i, e := range errs {
			ok := 0
			for _, err := range e {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, wgerr.DependencyCycle):
					t.Fatalf("pair %d: unexpected error %v", i, err)
				}
			}
			if ok != 1 {
				t.Fatalf("pair %d: %d edges won (%v), want exactly 1", i, ok, e)
			}
		}
		var edges int
		f.conn.QueryRow(ctx, `SELECT count(*) FROM dependencies WHERE project_id = $1`, f.project).Scan(&edges)
		if edges != pairs {
			t.Fatalf("%d edges stored, want %d", edges, pairs)
		}
		f.checkCounters(t)
	})
	t.Run("ConcurrentWithFinish", func(t *testing.T) {
		t.Parallel()
		// Adding "B depends on A" while A is being finished: B's counter
		// must end up exact either way.
		f := setupDB(t) // concurrent transactions
		const n = 40
		var wg sync.WaitGroup
		as, bs := make([]Item, n), make([]Item, n)
		for i := range n {
			as[i], bs[i] = f.mustItem(t, itemOpts{}), f.mustItem(t, itemOpts{})
		}
		start := make(chan struct{})
		for i := range n {
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				if err := f.svc.AddDependency(ctx, f.project, bs[i].ID, as[i].ID, "w"); err != nil {
					t.Errorf("AddDependency: %v", err)
				}
			}()
			go func() {
				defer wg.Done()
				<-start
				err := db.InTx(ctx, f.conn, func(tx pgx.Tx) error {
					return f.finishTx(ctx, tx, as[i].ID, StatusDone)
				})
				if err != nil {
					t.Errorf("finish: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		f.checkCounters(t)
		for _, b := range bs {
			wantState(t, f.mustGet(t, b.ID), StateReady)
		}
	})
}

func TestRemoveDependency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a := f.mustItem(t, itemOpts{})
		done := f.mustItem(t, itemOpts{})
		f.mustFinish(t, done.ID, StatusDone)
		b := f.mustItem(t, itemOpts{DependsOn: []uuidT{a.ID, done.ID}})
		wantState(t, b, StateBlocked)
		if err := f.svc.RemoveDependency(ctx, f.project, b.ID, done.ID); err != nil {
			t.Fatal(err)
		}
		wantState(t, f.mustGet(t, b.ID), StateBlocked)
		if err := f.svc.RemoveDependency(ctx, f.project, b.ID, a.ID); err != nil {
			t.Fatal(err)
		}
		wantState(t, f.mustGet(t, b.ID), StateReady)
		f.checkCounters(t)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		a, b := f.mustItem(t, itemOpts{}), f.mustItem(t, itemOpts{})
		if err := f.svc.RemoveDependency(ctx, f.project, b.ID, a.ID); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("got %v, want not_found", err)
		}
	})
}
