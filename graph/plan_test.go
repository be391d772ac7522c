package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/wgerr"
)

func (f fixture) countItems(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.conn.QueryRow(context.Background(), `SELECT count(*) FROM items WHERE project_id = $1`, f.project).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestImportPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		existing := f.mustItem(t, itemOpts{Title: "existing"})
		plan := []PlanItem{
			{Key: "design", Title: "Design", Line: 1, Labels: []string{"phase:1"}},
			{Key: "build", Title: "Build", Line: 2, DependsOn: []string{"design", existing.ID.String()}, Children: []PlanItem{
				{Key: "api", Title: "API", Line: 3},
				{Key: "ui", Title: "UI", Line: 4, DependsOn: []string{"api"}},
				{Title: "no key", Line: 5},
			}},
			{Key: "ship", Title: "Ship", Line: 6, DependsOn: []string{"build"}},
		}
		res, err := f.svc.ImportPlan(ctx, f.project, plan, "planner", false)
		if err != nil {
			t.Fatal(err)
		}
		if got := titles(res.Items); fmt.Sprint(got) != "[Design Build API UI no key Ship]" {
			t.Fatalf("items %v", got)
		}
		if len(res.Keys) != 5 {
			t.Fatalf("keys %v", res.Keys)
		}
		build := f.mustGet(t, res.Keys["build"])
		wantState(t, build, StateBlocked)
		if len(build.BlockedBy.Dependencies) != 2 || len(build.BlockedBy.Children) != 3 {
			t.Fatalf("build blocked_by %+v", build.BlockedBy)
		}
		ui := f.mustGet(t, res.Keys["ui"])
		if ui.ParentID == nil || *ui.ParentID != build.ID || ui.CreatedBy != "planner" {
			t.Fatalf("ui %+v", ui)
		}
		for i, want := range []State{StateReady, StateBlocked, StateReady, StateBlocked, StateReady, StateBlocked} {
			if res.Items[i].State != want {
				t.Fatalf("item %d state %s, want %s", i, res.Items[i].State, want)
			}
			if got := f.mustGet(t, res.Items[i].ID); got.State != want {
				t.Fatalf("stored item %d state %s, want %s", i, got.State, want)
			}
		}
		f.checkCounters(t)
	})
	t.Run("DryRun", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		res, err := f.svc.ImportPlan(ctx, f.project, []PlanItem{{Key: "a", Title: "A"}, {Key: "b", Title: "B", DependsOn: []string{"a"}}}, "p", true)
		if err != nil || len(res.Items) != 2 || res.Items[1].State != StateBlocked {
			t.Fatalf("dry run: %v %+v", err, res)
		}
		if n := f.countItems(t); n != 0 {
			t.Fatalf("%d items stored by a dry run", n)
		}
	})
	t.Run("ErrUnknownKey", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		_, err := f.svc.ImportPlan(ctx, f.project, []PlanItem{
			{Key: "a", Title: "A", Line: 3},
			{Key: "b", Title: "B", Line: 7, DependsOn: []string{"a", "nope"}},
		}, "p", false)
		if !errors.Is(err, wgerr.Invalid) || !strings.Contains(err.Error(), "line 7") || !strings.Contains(err.Error(), `"nope"`) {
			t.Fatalf("got %v, want invalid_argument naming line 7", err)
		}
		if n := f.countItems(t); n != 0 {
			t.Fatalf("%d items stored", n)
		}
	})
	t.Run("ErrUnknownItem", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		missing := newID()
		_, err := f.svc.ImportPlan(ctx, f.project, []PlanItem{
			{Key: "a", Title: "A", Line: 1},
			{Key: "b", Title: "B", Line: 2, DependsOn: []string{missing.String()}},
		}, "p", false)
		if !errors.Is(err, wgerr.Invalid) || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("got %v, want invalid_argument naming line 2", err)
		}
		if n := f.countItems(t); n != 0 {
			t.Fatalf("%d items stored: the import is not atomic", n)
		}
	})
	t.Run("ErrDuplicateKey", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		_, err := f.svc.ImportPlan(ctx, f.project, []PlanItem{{Key: "a", Title: "A", Line: 1}, {Key: "a", Title: "A2", Line: 9}}, "p", false)
		if !errors.Is(err, wgerr.Invalid) || !strings.Contains(err.Error(), "line 9") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("ErrCycle", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		_, err := f.svc.ImportPlan(ctx, f.project, []PlanItem{
			{Key: "a", Title: "A", Line: 1, DependsOn: []string{"c"}},
			{Key: "b", Title: "B", Line: 2, DependsOn: []string{"a"}},
			{Key: "c", Title: "C", Line: 3, DependsOn: []string{"b"}},
			{Key: "d", Title: "D", Line: 4},
		}, "p", false)
		var ce *CycleError
		if !errors.As(err, &ce) || !errors.Is(err, wgerr.DependencyCycle) {
			t.Fatalf("got %v, want a cycle", err)
		}
		want := "dependency cycle: a (line 1) -> c (line 3) -> b (line 2) -> a (line 1)"
		if err.Error() != want {
			t.Fatalf("message %q, want %q", err, want)
		}
		if n := f.countItems(t); n != 0 {
			t.Fatalf("%d items stored", n)
		}
	})
	t.Run("ErrCycleThroughParent", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		_, err := f.svc.ImportPlan(ctx, f.project, []PlanItem{
			{Key: "epic", Title: "Epic", Line: 1, Children: []PlanItem{
				{Key: "kid", Title: "Kid", Line: 2, DependsOn: []string{"epic"}},
			}},
		}, "p", false)
		if !errors.Is(err, wgerr.DependencyCycle) || !strings.Contains(err.Error(), "epic (line 1) -> kid (line 2) -> epic (line 1)") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("TenThousand", func(t *testing.T) {
		t.Parallel()
		// Its own database: an import this large ANALYZEs the tables,
		// which in a test transaction would hold their statistics locked
		// against every other large import until the test ends.
		f := setupDB(t)
		plan := bigPlan(1000, 9)
		start := time.Now()
		res, err := f.svc.ImportPlan(ctx, f.project, plan, "p", false)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("imported %d items in %v", len(res.Items), time.Since(start))
		if len(res.Items) != 10000 || f.countItems(t) != 10000 {
			t.Fatalf("%d items", len(res.Items))
		}
		f.checkCounters(t)
	})
}

// bigPlan builds epics, each with kids children chained by dependencies
// (kid j depends on kid j-1), and every epic depending on the previous one.
func bigPlan(epics, kids int) []PlanItem {
	plan := make([]PlanItem, epics)
	for e := range plan {
		p := PlanItem{Key: fmt.Sprintf("e%d", e), Title: fmt.Sprintf("epic %d", e), Line: e*(kids+1) + 1,
			Labels: []string{"epic"}}
		if e > 0 {
			p.DependsOn = []string{fmt.Sprintf("e%d", e-1)}
		}
		for k := range kids {
			c := PlanItem{Key: fmt.Sprintf("e%d.%d", e, k), Title: fmt.Sprintf("task %d.%d", e, k), Line: p.Line + k + 1,
				Body: "do the thing", Priority: int32(k)}
			if k > 0 {
				c.DependsOn = []string{fmt.Sprintf("e%d.%d", e, k-1)}
			}
			p.Children = append(p.Children, c)
		}
		plan[e] = p
	}
	return plan
}

// TestImportPlanAgain: a key that exists in the project is left alone; a new
// item may depend on it and sit below it, but not below a finished one.
func TestImportPlanAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	first := []PlanItem{{Key: "a", Title: "A"}, {Key: "b", Title: "B"}}
	res, err := f.svc.ImportPlan(ctx, f.project, first, "planner", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OKNewDependsOnExisting", func(t *testing.T) {
		again := []PlanItem{{Key: "a", Title: "A", Children: []PlanItem{{Key: "a1", Title: "A1", DependsOn: []string{"b"}}}}, {Key: "b", Title: "B2"}}
		got, err := f.svc.ImportPlan(ctx, f.project, again, "planner", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Items) != 1 || got.Keys["a"] != res.Keys["a"] || fmt.Sprint(got.Existing["b"].Differs) != "[title]" || len(got.Existing["a"].Differs) != 0 {
			t.Fatalf("result %+v", got)
		}
		wantState(t, f.mustGet(t, got.Keys["a1"]), StateBlocked) // waits for b
		wantState(t, f.mustGet(t, got.Keys["a"]), StateBlocked)  // waits for a1
		if b := f.mustGet(t, res.Keys["b"]); b.Title != "B" {
			t.Fatalf("the existing item was changed: %q", b.Title)
		}
	})
	t.Run("ErrParentFinished", func(t *testing.T) {
		f.mustFinish(t, res.Keys["b"], StatusDone)
		before := f.countItems(t)
		_, err := f.svc.ImportPlan(ctx, f.project, []PlanItem{{Key: "b", Title: "B", Children: []PlanItem{{Key: "b1", Title: "B1"}}}}, "planner", false)
		if !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("err = %v, want conflict", err)
		}
		if n := f.countItems(t); n != before {
			t.Fatalf("items %d -> %d", before, n)
		}
	})
}

// TestImportPlanOnExpiry: a plan item may say what an expired lease of it
// means (on_expiry), as an item created alone may; a value other than
// retry or reconcile refuses the plan at that item.
func TestImportPlanOnExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	res, err := f.svc.ImportPlan(ctx, f.project, []PlanItem{
		{Key: "deploy", Title: "Deploy", Line: 1, OnExpiry: OnExpiryReconcile, Children: []PlanItem{
			{Key: "build", Title: "Build", Line: 2, OnExpiry: OnExpiryRetry},
		}},
		{Key: "docs", Title: "Docs", Line: 3},
	}, "planner", false)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"deploy": OnExpiryReconcile, "build": OnExpiryRetry, "docs": ""} {
		got := f.mustGet(t, res.Keys[key]).OnExpiry
		if (want == "" && got != nil) || (want != "" && (got == nil || *got != want)) {
			t.Errorf("%s: on_expiry %v, want %q", key, got, want)
		}
	}

	_, err = f.svc.ImportPlan(ctx, f.project, []PlanItem{
		{Key: "a", Title: "A", Line: 1},
		{Key: "b", Title: "B", Line: 2, OnExpiry: "later"},
	}, "planner", false)
	var we *wgerr.Error
	if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || !strings.Contains(we.Message, "line 2") || !strings.Contains(we.Message, "on_expiry") {
		t.Fatalf("on_expiry later: %v, want invalid_argument at line 2 naming on_expiry", err)
	}
}
