package web_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/graph"
)

// densePlan imports n items where each depends on every earlier one
// (n(n-1)/2 dependencies): the plan an agent used to stall the drawing.
func (e *env) densePlan(n int) []uuid.UUID {
	e.t.Helper()
	plan := make([]graph.PlanItem, n)
	for i := range plan {
		plan[i] = graph.PlanItem{Key: fmt.Sprintf("k%d", i), Title: fmt.Sprintf("Step %d of the dense plan", i), Line: i + 1}
		for j := range i {
			plan[i].DependsOn = append(plan[i].DependsOn, fmt.Sprintf("k%d", j))
		}
	}
	res, err := e.graph.ImportPlan(context.Background(), e.project.ID, plan, "test", false)
	if err != nil {
		e.t.Fatal(err)
	}
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = res.Keys[fmt.Sprintf("k%d", i)]
	}
	return ids
}

var edgeRE = regexp.MustCompile(`<g[^>]*class="edge`)

// wantSimplified checks that a page answered with a drawing that left out
// the implied arrows and says so, drawing at most maxEdges arrows.
func wantSimplified(t *testing.T, r response, maxEdges int) {
	t.Helper()
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `data-drawing="simplified"`, "Simplified")
	if n := len(edgeRE.FindAllString(r.body, -1)); n == 0 || n > maxEdges {
		t.Errorf("%s: %d arrows drawn, want 1..%d", r.Request.URL.Path, n, maxEdges)
	}
}

func TestGraphDensePlan(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ids := e.densePlan(40) // 780 dependencies
	b := e.signIn(e.human)
	last := ids[len(ids)-1]
	// Each picture is the chain the 780 dependencies reduce to.
	wantSimplified(t, b.get("/p/acme/items/"+last.String()), 39)
	wantSimplified(t, b.get("/p/acme/items/"+last.String()+"/graph"), 39)
	wantSimplified(t, b.get("/p/acme/graph"), 39)
}

// rssKB is the process's resident set size in KiB, read from /proc.
func rssKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	var kb int
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			fmt.Sscanf(strings.TrimPrefix(line, "VmRSS:"), "%d", &kb)
		}
	}
	return kb
}

func TestGraphDensePlan500(t *testing.T) {
	t.Parallel()
	e := setup(t)
	start := time.Now()
	ids := e.densePlan(500) // 124,750 dependencies
	t.Logf("import: %v", time.Since(start))
	// As autovacuum would soon after such an import: without statistics the
	// planner may walk the prerequisites through the wrong index (seconds
	// more in the critical path's query; the drawing is not slower).
	if _, err := e.pool.Exec(context.Background(), "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	runtime.GC()
	before := rssKB(t)
	// Figures for the report, not assertions: how long each page took.
	timed := func(path string) response {
		start := time.Now()
		r := b.get(path)
		t.Logf("GET %s: %v", path, time.Since(start))
		return r
	}
	wantSimplified(t, timed("/p/acme/items/"+ids[250].String()), 60)
	wantSimplified(t, timed("/p/acme/items/"+ids[499].String()), 60)
	wantSimplified(t, timed("/p/acme/items/"+ids[499].String()+"/graph"), 400)
	wantSimplified(t, timed("/p/acme/graph"), 400)
	peak := rssKB(t)
	runtime.GC()
	debug.FreeOSMemory()
	t.Logf("RSS (whole test process) before the pages %d MiB, after them %d MiB, after GC %d MiB", before/1024, peak/1024, rssKB(t)/1024)
	// The same graph again is answered from the cache.
	n := e.draw.Layouts()
	wantSimplified(t, b.get("/p/acme/graph"), 400)
	if got := e.draw.Layouts(); got != n {
		t.Errorf("unchanged graph laid out again: %d layouts, want %d", got, n)
	}
}

// otherProject creates a second project with an item and a dependency and
// signs in a person of it.
func (e *env) otherProject(name string) *browser {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.graph.CreateProject(ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	a, err := e.graph.CreateItem(ctx, p.ID, graph.NewItem{Title: "first", CreatedBy: "test"})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.graph.CreateItem(ctx, p.ID, graph.NewItem{Title: "second", DependsOn: []uuid.UUID{a.ID}, CreatedBy: "test"}); err != nil {
		e.t.Fatal(err)
	}
	_, tok, err := e.auth.Create(ctx, &p.ID, "t-other", auth.RoleHuman)
	if err != nil {
		e.t.Fatal(err)
	}
	b := e.browser()
	b.get("/signin")
	if r := b.post("/signin", map[string][]string{"token": {tok}, "next": {"/"}}); r.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("sign in: %d", r.StatusCode)
	}
	return b
}

func TestGraphOtherProjectNotHeld(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.mustItem("a")
	e.mustItem("b", a.ID)
	other := e.otherProject("other")
	held, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	e.draw.SetHook(func(ctx context.Context, project uuid.UUID) error {
		if project == e.project.ID && once.CompareAndSwap(false, true) {
			close(held)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	})
	acme := e.signIn(e.human)
	done := make(chan response, 1)
	go func() { done <- acme.get("/p/acme/graph") }()
	<-held
	// acme's layout is held; the other project's picture is drawn meanwhile.
	otherDone := make(chan response, 1)
	go func() { otherDone <- other.get("/p/other/graph") }()
	var r response
	select {
	case r = <-otherDone:
	case <-done:
		t.Fatal("the held layout finished first")
	case <-time.After(30 * time.Second): // a deadlock, not a speed bound
	}
	close(release)
	if r.Response == nil {
		r = <-otherDone
		t.Fatal("the other project's picture waited for the held layout")
	}
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `id="graph"`, `class="node`)
	wantStatus(t, <-done, http.StatusOK)
}

func TestGraphLayoutFailureDoesNotPoison(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.mustItem("a")
	e.mustItem("b", a.ID)
	var calls atomic.Int32
	e.draw.SetHook(func(ctx context.Context, project uuid.UUID) error {
		if calls.Add(1) == 1 {
			panic("layout crashed")
		}
		return nil
	})
	b := e.signIn(e.human)
	r := b.get("/p/acme/graph")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `data-drawing="summary"`, "could not be drawn")
	// The next drawing of the same graph is laid out afresh and succeeds.
	r = b.get("/p/acme/graph")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, `id="graph"`, `id="n-`+a.ID.String()+`"`)
}

func TestGraphSummary(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	t.Run("Empty", func(t *testing.T) {
		r := b.get("/p/acme/graph")
		wantStatus(t, r, http.StatusOK)
		// The empty state leads to what fills it: the new-item form.
		wantBody(t, r, "Nothing to draw yet", `href="/p/acme/items/new"`)
	})
	t.Run("OverBudget", func(t *testing.T) {
		// 3 levels of 30 items, each waiting for every item of the level
		// before: 1,800 arrows, none implied by others.
		var plan []graph.PlanItem
		for l := range 3 {
			for i := range 30 {
				it := graph.PlanItem{Key: fmt.Sprintf("l%d-%d", l, i), Title: fmt.Sprintf("level %d item %d", l, i), Line: len(plan) + 1}
				for j := range 30 {
					if l > 0 {
						it.DependsOn = append(it.DependsOn, fmt.Sprintf("l%d-%d", l-1, j))
					}
				}
				plan = append(plan, it)
			}
		}
		if _, err := e.graph.ImportPlan(context.Background(), e.project.ID, plan, "test", false); err != nil {
			t.Fatal(err)
		}
		r := b.get("/p/acme/graph")
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, `data-drawing="summary"`, "Summarised, not drawn", "1800 arrows", "level 2 item 29")
		if strings.Contains(r.body, `id="graph"`) {
			t.Error("an over-budget graph was drawn")
		}
		if n := e.draw.Layouts(); n != 0 {
			t.Errorf("over-budget graph was laid out (%d layouts)", n)
		}
	})
}
