package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	wgpage "github.com/workgraph-dev/workgraph/page"
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

// TestInboxHTMLWithinBudget: an inbox of requests whose contexts render
// larger than they count (a context is shown indented and HTML-escaped:
// 500 KB of ["a", "a", ...] is 1.5 MB of page) ends each page once its
// HTML reaches the byte budget of a page (page.MaxBytes), with a Next page
// link, and walking the links shows every open request exactly once, in
// the inbox's order. The budget counted the requests' JSON, so such an
// inbox was one page of 7 requests and 10 MB.
func TestInboxHTMLWithinBudget(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const n = 7
	doc, err := json.Marshal(make([]string, 100_000))
	if err != nil {
		t.Fatal(err)
	}
	doc = []byte(strings.ReplaceAll(string(doc), `""`, `"a"`))
	var ids []string
	for i := range n {
		it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: fmt.Sprintf("wide-%d", i), CreatedBy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		q, err := e.att.Open(ctx, e.project.ID, it.ID, attention.NewRequest{
			Question: fmt.Sprintf("question wide-%d?", i), Source: attention.SourcePerson, RequestedBy: "test", Context: doc,
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, q.ID.String())
	}
	b := e.signIn(e.human)
	next := regexp.MustCompile(`rel="next" href="([^"]+)"`)
	var order []int
	path, pages := "/p/acme/inbox", 0
	for path != "" && pages <= n {
		r := b.get(path)
		wantStatus(t, r, http.StatusOK)
		pages++
		shown := 0
		for i := range n {
			if k := strings.Count(r.body, fmt.Sprintf("question wide-%d?", i)); k > 0 {
				order = append(order, i)
				shown += k
			}
		}
		if shown > 1 && len(r.body) > wgpage.MaxBytes {
			t.Errorf("page %d shows %d requests in %d bytes of HTML, over the budget of %d", pages, shown, len(r.body), wgpage.MaxBytes)
		}
		if shown == 0 {
			t.Fatalf("page %d shows no request", pages)
		}
		path = ""
		if m := next.FindStringSubmatch(r.body); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	if pages < 2 {
		t.Errorf("%d requests of 1.5 MB of HTML each in one page", n)
	}
	if fmt.Sprint(order) != fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 6}) {
		t.Errorf("the pages showed requests %v, want each once in order", order)
	}

	// A notification's link to a request the first page's budget leaves
	// out shows the page that starts with it.
	r := b.get("/p/acme/inbox?req=" + ids[n-2])
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.body, fmt.Sprintf("question wide-%d?", n-2)) {
		t.Errorf("the link to request wide-%d shows a page without it", n-2)
	}
}
