package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
)

// TestInboxByteBudget: an inbox whose items carry large descriptions ends
// its page once the questions and descriptions it renders reach the byte
// budget of a page (page.MaxBytes, as the API's lists), with a Next page
// link, and walking the links shows every open request exactly once. It
// used to render 50 such items in one page (50 MiB of markdown each view).
func TestInboxByteBudget(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const n, big = 6, 900 << 10 // 6 items of 900 KiB: about 5.4 MiB
	for i := range n {
		it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{
			Title: fmt.Sprintf("big-%d", i), Body: strings.Repeat("word ", big/5), CreatedBy: "test",
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.att.Hold(ctx, e.project.ID, it.ID, fmt.Sprintf("hold big-%d?", i), "token:lead"); err != nil {
			t.Fatal(err)
		}
	}
	b := e.signIn(e.human)
	next := regexp.MustCompile(`rel="next" href="([^"]+)"`)
	seen := map[string]int{}
	path, pages := "/p/acme/inbox", 0
	for path != "" && pages <= n {
		r := b.get(path)
		wantStatus(t, r, http.StatusOK)
		pages++
		for i := range n {
			seen[fmt.Sprintf("big-%d", i)] += strings.Count(r.body, fmt.Sprintf("hold big-%d?", i))
		}
		path = ""
		if m := next.FindStringSubmatch(r.body); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	if pages < 2 {
		t.Fatalf("%d requests on items of %d bytes in one page", n, big)
	}
	for i := range n {
		if k := fmt.Sprintf("big-%d", i); seen[k] != 1 {
			t.Errorf("%s shown %d times across %d pages, want once", k, seen[k], pages)
		}
	}
}
