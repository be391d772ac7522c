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
	"github.com/workgraph-dev/workgraph/lease"
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

// TestInboxHTMLWithinBudget: an inbox of requests whose questions render
// larger than they count (a quote counts 2 bytes in JSON and is 5 or 6 of
// HTML: 60 KB of them is about 360 KB of page) ends each page once its
// HTML reaches the byte budget of a page (page.MaxBytes), with a Next page
// link, and walking the links shows every open request exactly once, in
// the inbox's order. The budget counted the requests' JSON, so such an
// inbox was one page of 14 requests and 5 MB. (Contexts rendered larger
// still, indented, until jsonBlock bounded them: TestInboxEntryWithinBudget.)
func TestInboxHTMLWithinBudget(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const n = 14
	quotes := strings.Repeat(`"`, 60_000)
	var ids []string
	for i := range n {
		it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: fmt.Sprintf("wide-%d", i), CreatedBy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		q, err := e.att.Open(ctx, e.project.ID, it.ID, attention.NewRequest{
			Question: fmt.Sprintf("question wide-%d? ", i) + quotes, Source: attention.SourcePerson, RequestedBy: "test",
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
		t.Errorf("%d requests of 360 KB of HTML each in one page", n)
	}
	if fmt.Sprint(order) != fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}) {
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

// TestInboxEntryWithinBudget: one request whose parts are each as large
// as they may be, and render larger (a context of 20 KB nested 1500 deep,
// which indented is 4.5 MB; a description of 1 MiB of "&", which is 5 MiB
// of markup), is a page within the byte budget (page.MaxBytes): the entry
// shows the context compact and cut, and the start of the description,
// linking to the whole of each. A single entry used to be shown whole, and
// the page was 10 MB. The item's page shows a large result the same way.
func TestInboxEntryWithinBudget(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const depth = 1500
	deep := strings.Repeat("[", depth) + `"` + strings.Repeat("b", 20_000) + `"` + strings.Repeat("]", depth)
	b := e.signIn(e.human)

	// An item's result as large: its page shows it cut, linking to it.
	done, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{Title: "deep result", CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Complete(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, json.RawMessage(deep), nil); err != nil {
		t.Fatal(err)
	}
	r := b.get("/p/acme/items/" + done.ID.String())
	wantStatus(t, r, http.StatusOK)
	resURL := "/p/acme/items/" + done.ID.String() + "/result"
	wantBody(t, r, `href="`+resURL+`"`)
	if len(r.body) > 1<<20 {
		t.Errorf("the page of an item with a result nested %d deep is %d bytes", depth, len(r.body))
	}
	r = b.get(resURL)
	wantStatus(t, r, http.StatusOK)
	if r.body != deep {
		t.Errorf("the result link answers %d bytes, want the %d of the result", len(r.body), len(deep))
	}

	it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{
		Title: "vast", Body: strings.Repeat("&", graph.MaxBodyBytes-16), CreatedBy: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.att.Open(ctx, e.project.ID, it.ID, attention.NewRequest{
		Question: "question vast?", Source: attention.SourcePerson, RequestedBy: "test", Context: json.RawMessage(deep),
	})
	if err != nil {
		t.Fatal(err)
	}
	r = b.get("/p/acme/inbox")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.body, "question vast?") {
		t.Fatal("the inbox does not show the request")
	}
	if len(r.body) > wgpage.MaxBytes {
		t.Errorf("an inbox of one request is %d bytes of HTML, over the budget of %d", len(r.body), wgpage.MaxBytes)
	}
	ctxURL := "/p/acme/attention/" + q.ID.String() + "/context"
	wantBody(t, r, `href="`+ctxURL+`"`, `href="/p/acme/items/`+it.ID.String()+`">The whole description</a>`)

	// The link answers the whole context, as stored.
	r = b.get(ctxURL)
	wantStatus(t, r, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("the context's content type is %q", ct)
	}
	if r.body != deep {
		t.Errorf("the context link answers %d bytes, want the %d of the context", len(r.body), len(deep))
	}
	wantStatus(t, b.get("/p/acme/attention/"+it.ID.String()+"/context"), http.StatusNotFound)
}

// TestInboxHeaderSaysWhatIsShown: the header of an inbox page the byte
// budget ended early says how many requests it shows, not "50 a page"; a
// page of fewer requests than that because there are no more says the
// page size. It said "50 a page" above 3 requests and a Next page link.
func TestInboxHeaderSaysWhatIsShown(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const n = 5
	for i := range n {
		it, err := e.graph.CreateItem(ctx, e.project.ID, graph.NewItem{
			Title: fmt.Sprintf("long-%d", i), Body: strings.Repeat("word ", (graph.MaxBodyBytes-16)/5), CreatedBy: "test",
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.att.Hold(ctx, e.project.ID, it.ID, fmt.Sprintf("hold long-%d?", i), "token:lead"); err != nil {
			t.Fatal(err)
		}
	}
	b := e.signIn(e.human)
	r := b.get("/p/acme/inbox")
	wantStatus(t, r, http.StatusOK)
	shown := strings.Count(r.body, `<article class="request`)
	if shown == 0 || shown >= n || !strings.Contains(r.body, `rel="next"`) {
		t.Fatalf("the first page shows %d of %d requests of 1 MiB items (want a page cut by the budget)", shown, n)
	}
	if strings.Contains(r.body, ", 50 a page.") {
		t.Errorf("a page of %d requests cut by its size says %q", shown, "50 a page")
	}
	wantBody(t, r, fmt.Sprintf("up to 50 a page: this one shows %d, as many as fit", shown))

	r = b.get(html.UnescapeString(regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(r.body)[1]))
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.body, `rel="next"`) {
		wantBody(t, r, ", 50 a page.")
	}
}
