package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
)

// TestDependencyChoicesCloseNoCycle: the item page suggests as new
// dependencies only items that can be added: not the item, not one it
// depends on already, and none that waits for it, directly or not (its
// dependents and theirs, its parent, which waits for its children), since
// adding one of those is refused as a cycle. An unrelated open item is
// still suggested, and so is one the item's prerequisite waits for.
func TestDependencyChoicesCloseNoCycle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	parent := e.mustItem("parent")
	dep := e.mustItem("already a dependency")
	upstream := e.mustItem("upstream of the dependency")
	if err := e.graph.AddDependency(ctx, e.project.ID, dep.ID, upstream.ID, "test"); err != nil {
		t.Fatal(err)
	}
	it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "the item", ParentID: &parent.ID, DependsOn: []uuid.UUID{dep.ID}, CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	dependent := e.mustItem("dependent", it.ID)
	indirect := e.mustItem("indirect dependent", dependent.ID)
	grandparentWaiter := e.mustItem("waits for the parent", parent.ID)
	unrelated := e.mustItem("unrelated")

	b := e.signIn(e.human)
	r := b.get("/p/acme/items/" + it.ID.String())
	wantStatus(t, r, http.StatusOK)
	m := regexp.MustCompile(`(?s)<datalist id="dep-choices">(.*?)</datalist>`).FindStringSubmatch(r.body)
	if m == nil {
		t.Fatal("the item page has no dependency suggestions")
	}
	choices := m[1]
	for _, want := range []graph.Item{unrelated, upstream} {
		if !strings.Contains(choices, want.ID.String()) {
			t.Errorf("%q is not suggested; it can be added", want.Title)
		}
	}
	for _, refused := range []graph.Item{it, dep, dependent, indirect, parent, grandparentWaiter} {
		if strings.Contains(choices, refused.ID.String()) {
			t.Errorf("%q is suggested; adding it is refused", refused.Title)
		}
	}
	// Each one left out is indeed refused, and each one offered accepted.
	for _, refused := range []graph.Item{dependent, indirect, parent, grandparentWaiter} {
		if err := e.graph.AddDependency(ctx, e.project.ID, it.ID, refused.ID, "test"); err == nil {
			t.Errorf("adding %q was accepted: the suggestion left out an item that can be added", refused.Title)
		}
	}
	for _, ok := range []graph.Item{unrelated, upstream} {
		if err := e.graph.AddDependency(ctx, e.project.ID, it.ID, ok.ID, "test"); err != nil {
			t.Errorf("adding %q: %v", ok.Title, err)
		}
	}
}
