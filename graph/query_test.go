package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestCreateItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		got, err := f.svc.CreateItem(ctx, f.project, NewItem{
			Title: "  Write docs ", Body: "# spec", Priority: 3, Labels: []string{"docs", "area/api"},
			Metadata: []byte(`{"k": 1}`), CreatedBy: "alice",
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != "Write docs" || got.Body != "# spec" || got.Priority != 3 || got.Version != 1 ||
			got.CreatedBy != "alice" || !got.CreatedAt.Equal(t0) || got.Status != StatusOpen || got.Epoch != 0 {
			t.Fatalf("created %+v", got)
		}
		wantState(t, got, StateReady)
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		long := make([]byte, 501)
		for i := range long {
			long[i] = 'x'
		}
		many := make([]string, 33)
		for i := range many {
			many[i] = fmt.Sprintf("l%d", i)
		}
		for name, in := range map[string]NewItem{
			"EmptyTitle": {Title: "   ", CreatedBy: "a"},
			"LongTitle":  {Title: string(long), CreatedBy: "a"},
			"BadLabel":   {Title: "t", Labels: []string{"Has Space"}, CreatedBy: "a"},
			"TooMany":    {Title: "t", Labels: many, CreatedBy: "a"},
			"Metadata":   {Title: "t", Metadata: []byte(`"str"`), CreatedBy: "a"},
			"NoCreator":  {Title: "t"},
		} {
			if _, err := f.svc.CreateItem(ctx, f.project, in); !errors.Is(err, wgerr.Invalid) {
				t.Errorf("%s: %v, want invalid_argument", name, err)
			}
		}
		page, _ := f.svc.ListItems(ctx, f.project, ListFilter{})
		if len(page.Items) != 0 {
			t.Fatalf("%d items stored", len(page.Items))
		}
	})
	t.Run("ErrParent", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		missing := newID()
		if _, err := f.svc.CreateItem(ctx, f.project, NewItem{Title: "t", ParentID: &missing, CreatedBy: "a"}); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("missing parent: %v", err)
		}
		done := f.mustItem(t, itemOpts{})
		f.mustFinish(t, done.ID, StatusDone)
		if _, err := f.svc.CreateItem(ctx, f.project, NewItem{Title: "t", ParentID: &done.ID, CreatedBy: "a"}); !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("done parent: %v", err)
		}
		if _, err := f.svc.CreateItem(ctx, f.project, NewItem{Title: "t", DependsOn: []uuidT{missing}, CreatedBy: "a"}); !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("missing dependency: %v", err)
		}
	})
}

func TestListItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	var all []Item
	for i := range 25 {
		o := itemOpts{Title: fmt.Sprintf("task %02d", i)}
		if i%5 == 0 {
			o.Labels = []string{"five"}
		}
		all = append(all, f.mustItem(t, o))
	}
	blocked := f.mustItem(t, itemOpts{Title: "blocked 100%_x", DependsOn: []uuidT{all[0].ID}})
	kid := f.mustItem(t, itemOpts{Title: "kid", Parent: &all[1].ID})

	t.Run("Pagination", func(t *testing.T) {
		var seen []Item
		cursor := ""
		pages := 0
		for {
			page, err := f.svc.ListItems(ctx, f.project, ListFilter{Limit: 10, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			seen = append(seen, page.Items...)
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if pages != 3 || len(seen) != 27 {
			t.Fatalf("%d pages, %d items", pages, len(seen))
		}
		for i := range all {
			if seen[i].ID != all[i].ID {
				t.Fatalf("item %d out of order", i)
			}
		}
	})
	t.Run("Filters", func(t *testing.T) {
		for name, tc := range map[string]struct {
			f    ListFilter
			want int
		}{
			"Blocked":    {ListFilter{States: []State{StateBlocked}}, 2}, // blocked, all[1] (open child)
			"Ready":      {ListFilter{States: []State{StateReady}}, 25},
			"ReadyOrBlk": {ListFilter{States: []State{StateReady, StateBlocked}}, 27},
			"Label":      {ListFilter{Label: "five"}, 5},
			"Parent":     {ListFilter{ParentID: &all[1].ID}, 1},
			"Text":       {ListFilter{Text: "TASK 1"}, 10},
			"TextEscape": {ListFilter{Text: "100%_"}, 1},
			"Wildcard":   {ListFilter{Text: "%"}, 1},
		} {
			page, err := f.svc.ListItems(ctx, f.project, tc.f)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(page.Items) != tc.want {
				t.Errorf("%s: %d items, want %d", name, len(page.Items), tc.want)
			}
		}
		page, _ := f.svc.ListItems(ctx, f.project, ListFilter{States: []State{StateBlocked}})
		for _, it := range page.Items {
			if it.ID == blocked.ID && len(it.BlockedBy.Dependencies) != 1 {
				t.Fatalf("blocked_by not filled in lists: %+v", it.BlockedBy)
			}
		}
		_ = kid
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for name, lf := range map[string]ListFilter{
			"Limit":    {Limit: 501},
			"Negative": {Limit: -1},
			"Cursor":   {Cursor: "not-a-cursor"},
			"State":    {States: []State{"sleeping"}},
			"LongText": {Text: strings.Repeat("x", MaxTitleChars+1)},
			"LongLbl":  {Label: strings.Repeat("x", MaxLabelChars+1)},
		} {
			if _, err := f.svc.ListItems(ctx, f.project, lf); !errors.Is(err, wgerr.Invalid) {
				t.Errorf("%s: %v, want invalid_argument", name, err)
			}
		}
	})
}

func TestNeighbourhood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	root := f.mustItem(t, itemOpts{Title: "root"})
	epic := f.mustItem(t, itemOpts{Title: "epic", Parent: &root.ID})
	pre := f.mustItem(t, itemOpts{Title: "pre"})
	gone := f.mustItem(t, itemOpts{Title: "gone"})
	f.mustFinish(t, gone.ID, StatusCancelled)
	it := f.mustItem(t, itemOpts{Title: "it", Parent: &epic.ID, DependsOn: []uuidT{pre.ID, gone.ID}})
	kid := f.mustItem(t, itemOpts{Title: "kid", Parent: &it.ID})
	dep := f.mustItem(t, itemOpts{Title: "dep", DependsOn: []uuidT{it.ID}})

	n, err := f.svc.Neighbourhood(ctx, f.project, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Dependencies) != 2 || n.Dependencies[0].ID != pre.ID || n.Dependencies[1].State != StateCancelled {
		t.Fatalf("dependencies %+v", n.Dependencies)
	}
	if len(n.Dependents) != 1 || n.Dependents[0].ID != dep.ID {
		t.Fatalf("dependents %+v", n.Dependents)
	}
	if len(n.Children) != 1 || n.Children[0].ID != kid.ID {
		t.Fatalf("children %+v", n.Children)
	}
	if len(n.Ancestors) != 2 || n.Ancestors[0].ID != root.ID || n.Ancestors[1].ID != epic.ID {
		t.Fatalf("ancestors %+v", n.Ancestors)
	}
	if len(n.Item.BlockedBy.Dependencies) != 1 || len(n.Item.BlockedBy.Children) != 1 {
		t.Fatalf("blocked_by %+v", n.Item.BlockedBy)
	}
	if _, err := f.svc.Neighbourhood(ctx, f.project, newID()); !errors.Is(err, wgerr.NotFound) {
		t.Fatalf("missing: %v", err)
	}
}

func TestCriticalPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	// a <- b <- c <- goal, short <- goal, goal's child k <- (depends on) b
	a := f.mustItem(t, itemOpts{Title: "a"})
	b := f.mustItem(t, itemOpts{Title: "b", DependsOn: []uuidT{a.ID}})
	c := f.mustItem(t, itemOpts{Title: "c", DependsOn: []uuidT{b.ID}})
	short := f.mustItem(t, itemOpts{Title: "short"})
	goal := f.mustItem(t, itemOpts{Title: "goal", DependsOn: []uuidT{c.ID, short.ID}})
	f.mustItem(t, itemOpts{Title: "k", Parent: &goal.ID, DependsOn: []uuidT{c.ID}})
	done := f.mustItem(t, itemOpts{Title: "done"})
	f.mustFinish(t, done.ID, StatusDone)
	f.svc.AddDependency(ctx, f.project, a.ID, done.ID, "x")

	path, err := f.svc.CriticalPath(ctx, f.project, goal.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b", "c", "k", "goal"}
	if got := titles(path); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("critical path %v, want %v", got, want)
	}
	f.mustFinish(t, a.ID, StatusDone)
	path, _ = f.svc.CriticalPath(ctx, f.project, goal.ID)
	if got := titles(path); fmt.Sprint(got) != "[b c k goal]" {
		t.Fatalf("after finishing a: %v", got)
	}
	path, _ = f.svc.CriticalPath(ctx, f.project, a.ID)
	if got := titles(path); fmt.Sprint(got) != "[a]" {
		t.Fatalf("finished item: %v", got)
	}

	t.Run("Subgraph", func(t *testing.T) {
		g, err := f.svc.Subgraph(ctx, f.project, nil, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Nodes) != 7 || g.Truncated {
			t.Fatalf("%d nodes truncated=%v", len(g.Nodes), g.Truncated)
		}
		// 5 dependency edges + a->done + 1 child edge
		if len(g.Edges) != 7 {
			t.Fatalf("edges %+v", g.Edges)
		}
		if len(g.CriticalPath) != 4 || g.CriticalPath[0] != b.ID || g.CriticalPath[3] != goal.ID {
			t.Fatalf("critical path %v", g.CriticalPath)
		}
		g, _ = f.svc.Subgraph(ctx, f.project, nil, 0, 3)
		if len(g.Nodes) != 3 || !g.Truncated {
			t.Fatalf("limit 3: %d nodes truncated=%v", len(g.Nodes), g.Truncated)
		}
		g, err = f.svc.Subgraph(ctx, f.project, &short.ID, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Nodes) != 2 || len(g.Edges) != 1 || g.Edges[0].From != goal.ID || g.Edges[0].Kind != EdgeDependsOn {
			t.Fatalf("around short depth 1: %+v", g)
		}
		g, _ = f.svc.Subgraph(ctx, f.project, &short.ID, 2, 0)
		if len(g.Nodes) != 4 { // short, goal, c, k
			t.Fatalf("around short depth 2: %d nodes", len(g.Nodes))
		}
	})
}

func titles(refs []ItemRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Title
	}
	return out
}

// TestListItemsSearchesBodies: the text filter finds an item by its body as
// well as by its title, and only those.
func TestListItemsSearchesBodies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	inBody, err := f.svc.CreateItem(ctx, f.project, NewItem{
		Title: "Plain title", Body: "Move the **Quarterly** report to the new schema.", CreatedBy: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	inTitle := f.mustItem(t, itemOpts{Title: "quarterly numbers"})
	f.mustItem(t, itemOpts{Title: "unrelated"})
	page, err := f.svc.ListItems(ctx, f.project, ListFilter{Text: "QUARTERLY"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[0].ID != inBody.ID || page.Items[1].ID != inTitle.ID {
		t.Fatalf("search for QUARTERLY found %+v, want the item with it in its body, then the one with it in its title", page.Items)
	}
	if page, err = f.svc.ListItems(ctx, f.project, ListFilter{Text: "new schema"}); err != nil || len(page.Items) != 1 || page.Items[0].ID != inBody.ID {
		t.Fatalf("search for a phrase of the body: %+v, %v", page.Items, err)
	}
}

// TestListItemsSearchPlansEachText: a search plans its statement for its
// text (a prepared statement's generic plan, used after five runs, cannot
// read the trigram indexes and scans every item); a list without text
// leaves the plan cache alone.
func TestListItemsSearchPlansEachText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	mode := func() string {
		var m string
		if err := f.conn.QueryRow(ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if _, err := f.svc.ListItems(ctx, f.project, ListFilter{}); err != nil {
		t.Fatal(err)
	}
	if got := mode(); got != "auto" {
		t.Fatalf("plan_cache_mode after a list without text = %q, want auto", got)
	}
	if _, err := f.svc.ListItems(ctx, f.project, ListFilter{Text: "zebra"}); err != nil {
		t.Fatal(err)
	}
	if got := mode(); got != "force_custom_plan" {
		t.Fatalf("plan_cache_mode in a search's transaction = %q, want force_custom_plan", got)
	}
}

// TestListItemsOrders pages through every order two items at a time and
// compares with the order computed here.
func TestListItemsOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	var all []Item
	for i, prio := range []int32{3, 1, 3, 0, 2, 1, 3} {
		f.clk.Advance(time.Minute)
		all = append(all, f.mustItem(t, itemOpts{Title: fmt.Sprintf("item %d", i), Priority: prio}))
	}
	// Touch the second item last: it is the most recently updated (an edit
	// of its body, which no order reads; an edit to the stored values
	// would write nothing).
	f.clk.Advance(time.Minute)
	body := "touched"
	if _, err := f.svc.UpdateItem(ctx, f.project, all[1].ID, ItemPatch{Body: &body}); err != nil {
		t.Fatal(err)
	}
	all[1] = f.mustGet(t, all[1].ID)

	byIndex := func(ix ...int) []uuid.UUID {
		out := make([]uuid.UUID, len(ix))
		for i, x := range ix {
			out[i] = all[x].ID
		}
		return out
	}
	for order, want := range map[ItemOrder][]uuid.UUID{
		"":             byIndex(0, 1, 2, 3, 4, 5, 6),
		OrderCreated:   byIndex(0, 1, 2, 3, 4, 5, 6),
		OrderNewest:    byIndex(6, 5, 4, 3, 2, 1, 0),
		OrderPriority:  byIndex(3, 1, 5, 4, 0, 2, 6),
		OrderPriorityD: byIndex(6, 2, 0, 4, 5, 1, 3),
		OrderUpdated:   byIndex(0, 2, 3, 4, 5, 6, 1),
		OrderUpdatedD:  byIndex(1, 6, 5, 4, 3, 2, 0),
	} {
		var got []uuid.UUID
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("%q: the pages do not end", order)
			}
			pg, err := f.svc.ListItems(ctx, f.project, ListFilter{Order: order, Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatalf("%q: %v", order, err)
			}
			for _, it := range pg.Items {
				got = append(got, it.ID)
			}
			if cursor = pg.NextCursor; cursor == "" {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("order %q:\n got %v\nwant %v", order, got, want)
		}
	}

	t.Run("ErrOrderOrCursor", func(t *testing.T) {
		if _, err := f.svc.ListItems(ctx, f.project, ListFilter{Order: "title"}); !errors.Is(err, wgerr.Invalid) {
			t.Errorf("order title: %v, want invalid_argument", err)
		}
		pg, err := f.svc.ListItems(ctx, f.project, ListFilter{Order: OrderPriority, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.ListItems(ctx, f.project, ListFilter{Order: OrderUpdated, Cursor: pg.NextCursor}); !errors.Is(err, wgerr.Invalid) {
			t.Errorf("a priority cursor in the updated order: %v, want invalid_argument", err)
		}
		if _, err := f.svc.ListItems(ctx, f.project, ListFilter{Cursor: pg.NextCursor}); !errors.Is(err, wgerr.Invalid) {
			t.Errorf("a priority cursor in creation order: %v, want invalid_argument", err)
		}
	})
}
