package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
)

// TestItemPageSaysHowManyMoreBlockers: an item page lists the first
// graph.MaxBlockedByRefs unfinished prerequisites and says how many more
// there are, with a link to the graph that shows them.
func TestItemPageSaysHowManyMoreBlockers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := graph.MaxBlockedByRefs + 5
	ids := e.densePlan(n + 1)
	last := ids[n]
	r := e.signIn(e.human).get("/p/acme/items/" + last.String())
	wantStatus(t, r, http.StatusOK)
	if got := strings.Count(r.body, "<li>waits for "); got != graph.MaxBlockedByRefs {
		t.Errorf("%d prerequisites listed, want %d", got, graph.MaxBlockedByRefs)
	}
	wantBody(t, r, `class="more-blockers">and 5 more unfinished dependencies`, `href="/p/acme/items/`+last.String()+`/graph"`)
}
