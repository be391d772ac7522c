package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestAllProjectsInbox: an admin without a project has one inbox over
// every project (/inbox, their home): each entry names its project, a
// filter shows one project, and an answer given there reaches the right
// project and comes back to the same view.
func TestAllProjectsInbox(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	beta, err := e.graph.CreateProject(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	ask := func(p graph.Project, title, question string) attention.Request {
		t.Helper()
		if _, err := e.graph.CreateItem(ctx, p.ID, graph.NewItem{Title: title, CreatedBy: "test"}); err != nil {
			t.Fatal(err)
		}
		c, err := e.leases.Claim(ctx, p.ID, lease.ClaimRequest{Worker: "agent-" + p.Name})
		if err != nil {
			t.Fatal(err)
		}
		a, err := e.leases.Ask(ctx, p.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, attention.NewRequest{
			Question: question, SuggestedAnswers: []string{"Yes", "No"}, Blocking: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return a.Request
	}
	qa := ask(e.project, "Paint the shed", "Which colour, acme?")
	qb := ask(beta, "Mow the lawn", "How short, beta?")
	_, root, err := e.auth.Create(ctx, nil, "root", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.get("/signin")
	wantStatus(t, b.post("/signin", url.Values{"token": {root}, "next": {"/"}}), http.StatusSeeOther)

	t.Run("HomeIsTheInbox", func(t *testing.T) {
		r := b.get("/")
		wantStatus(t, r, http.StatusSeeOther)
		if loc := r.Header.Get("Location"); loc != "/inbox" {
			t.Fatalf("an admin's home: Location = %q, want /inbox", loc)
		}
	})
	t.Run("EveryProject", func(t *testing.T) {
		r := b.get("/inbox")
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, "Which colour, acme?", "How short, beta?",
			`id="req-`+qa.ID.String()+`" data-project="acme"`, `id="req-`+qb.ID.String()+`" data-project="beta"`,
			`action="/p/acme/attention/`+qa.ID.String()+`/resolve"`, `action="/p/beta/attention/`+qb.ID.String()+`/resolve"`,
			`href="/p/beta/inbox"`, `<a href="/inbox" aria-current="page">All projects <span class="count">2</span>`)
		// Oldest first across the projects.
		if strings.Index(r.body, "Which colour, acme?") > strings.Index(r.body, "How short, beta?") {
			t.Errorf("acme's older question is not first")
		}
	})
	t.Run("Filter", func(t *testing.T) {
		r := b.get("/inbox?project=beta")
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, "How short, beta?", `<a href="/inbox?project=beta" aria-current="page">beta <span class="count">1</span>`)
		if strings.Contains(r.body, "Which colour, acme?") {
			t.Errorf("the beta filter shows acme's question")
		}
		wantStatus(t, b.get("/inbox?project=nosuch"), http.StatusNotFound)
	})
	t.Run("AnswerFromHere", func(t *testing.T) {
		b.get("/inbox?project=beta") // its CSRF token
		r := b.post("/p/beta/attention/"+qb.ID.String()+"/resolve", url.Values{"suggested": {"No"}, "back": {"/inbox"}, "filter": {"beta"}})
		wantStatus(t, r, http.StatusSeeOther)
		want := "/inbox?answered=" + qb.ID.String() + "&in=beta&project=beta"
		if loc := r.Header.Get("Location"); loc != want {
			t.Fatalf("after answering: Location = %q, want %q", loc, want)
		}
		got, err := e.att.Get(ctx, beta.ID, qb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != attention.StateResolved || got.Answer == nil || *got.Answer != "No" {
			t.Fatalf("beta's request after the answer: %+v", got)
		}
		r = b.get(want)
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, `id="answered"`, "Mow the lawn", "The item is now")
		if strings.Contains(r.body, `id="req-`+qb.ID.String()+`"`) {
			t.Errorf("the answered request is still listed")
		}
		// acme's question is untouched.
		if got, err := e.att.Get(ctx, e.project.ID, qa.ID); err != nil || got.State != attention.StateOpen {
			t.Fatalf("acme's request: %+v, %v", got, err)
		}
	})
	t.Run("NotAnAdmin", func(t *testing.T) {
		h := e.signIn(e.human)
		r := h.get("/inbox")
		wantStatus(t, r, http.StatusSeeOther)
		if loc := r.Header.Get("Location"); loc != "/p/acme/inbox" {
			t.Fatalf("a person's /inbox: Location = %q, want their project's", loc)
		}
		// And another project's request cannot be answered by them.
		wantStatus(t, h.post("/p/beta/attention/"+uuid.NewString()+"/resolve", url.Values{"suggested": {"x"}}), http.StatusNotFound)
	})
}

// TestAllProjectsInboxPages: the all-projects inbox puts the overdue
// requests of every project first (oldest first), then the others oldest
// first, 50 a page, and pages on through all of them with a keyset
// cursor ("Next page", keeping the filter) without showing one twice or
// leaving one out; the counts say how many are open. It used to show the
// 50 oldest only, an overdue one among the newer never.
func TestAllProjectsInboxPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	beta, err := e.graph.CreateProject(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	// 36 requests in each project, alternating, each 12th due in a minute
	// (overdue below): the newest of them come after the 50 oldest.
	var order []attention.Request // oldest first
	for i := range 36 {
		for _, p := range []graph.Project{e.project, beta} {
			it, err := e.graph.CreateItem(ctx, p.ID, graph.NewItem{Title: fmt.Sprintf("%s item %02d", p.Name, i), CreatedBy: "test"})
			if err != nil {
				t.Fatal(err)
			}
			in := attention.NewRequest{Question: fmt.Sprintf("%s question %02d?", p.Name, i), Source: attention.SourcePerson, RequestedBy: "test"}
			if i%12 == 11 {
				in.DueIn = time.Minute
			}
			r, err := e.att.Open(ctx, p.ID, it.ID, in)
			if err != nil {
				t.Fatal(err)
			}
			order = append(order, r)
		}
	}
	later := attention.NewService(e.pool, clock.NewStub(time.Now().Add(time.Hour)), attention.Config{})
	if n, err := attention.NewDeadlineSweeper(later, 0, nil).RunOnce(ctx); err != nil || n != 6 {
		t.Fatalf("deadline sweep: %d, %v; want 6 overdue", n, err)
	}
	var want []string // the inbox's order
	for _, overdue := range []bool{true, false} {
		for i, r := range order {
			if (i/2%12 == 11) == overdue {
				want = append(want, r.ID.String())
			}
		}
	}
	_, root, err := e.auth.Create(ctx, nil, "root", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.get("/signin")
	wantStatus(t, b.post("/signin", url.Values{"token": {root}, "next": {"/"}}), http.StatusSeeOther)

	// pages follows the inbox's "Next page" links from path and returns
	// the requests each page shows, in order.
	pages := func(path string) [][]string {
		t.Helper()
		var out [][]string
		for path != "" && len(out) < 5 {
			r := b.get(path)
			wantStatus(t, r, http.StatusOK)
			var ids []string
			for _, m := range reqIDRE.FindAllStringSubmatch(r.body, -1) {
				ids = append(ids, m[1])
			}
			out = append(out, ids)
			path = ""
			if m := nextRE.FindStringSubmatch(r.body); m != nil {
				path = html.UnescapeString(m[1])
			}
		}
		return out
	}
	t.Run("OK", func(t *testing.T) {
		r := b.get("/inbox")
		wantBody(t, r, `<a href="/inbox" aria-current="page">All projects <span class="count">72</span>`,
			`acme <span class="count">36</span>`, `beta <span class="count">36</span>`,
			"50 of 72 open requests on this page, 6 overdue")
		got := pages("/inbox")
		if len(got) != 2 || len(got[0]) != 50 || len(got[1]) != 22 {
			t.Fatalf("pages of %v requests, want 50 and 22", lens(got))
		}
		if all := append(got[0], got[1]...); strings.Join(all, " ") != strings.Join(want, " ") {
			t.Fatalf("the inbox's order:\n%v\nwant:\n%v", all, want)
		}
		wantBody(t, b.get(nextOf(t, b, "/inbox")), "22 of 72 open requests on this page", `href="/inbox">← First page`)
	})
	t.Run("Filter", func(t *testing.T) {
		var wantBeta []string
		for _, id := range want {
			for i, r := range order {
				if r.ID.String() == id && i%2 == 1 {
					wantBeta = append(wantBeta, id)
				}
			}
		}
		got := pages("/inbox?project=beta")
		if len(got) != 1 || strings.Join(got[0], " ") != strings.Join(wantBeta, " ") {
			t.Fatalf("beta's inbox: %v\nwant %v", got, wantBeta)
		}
	})
	t.Run("ProjectInbox", func(t *testing.T) {
		// A project's own inbox pages the same way.
		a := e.signIn(e.human)
		r := a.get("/p/acme/inbox?after=" + url.QueryEscape(attention.InboxKey{Overdue: true, Seq: order[len(order)-2].Seq}.Cursor()))
		wantStatus(t, r, http.StatusOK)
		if n := strings.Count(r.body, `<article class="request`); n != 33 {
			t.Fatalf("acme after its overdue requests: %d requests, want its 33 others", n)
		}
	})
	t.Run("ErrCursor", func(t *testing.T) {
		wantStatus(t, b.get("/inbox?after=nonsense"), http.StatusBadRequest)
	})
}

var (
	reqIDRE = regexp.MustCompile(`<article class="request[^"]*" id="req-([0-9a-f-]{36})"`)
	nextRE  = regexp.MustCompile(`rel="next" href="([^"]+)"`)
)

func lens(pages [][]string) []int {
	var n []int
	for _, p := range pages {
		n = append(n, len(p))
	}
	return n
}

// nextOf is the "Next page" link of the page at path.
func nextOf(t *testing.T, b *browser, path string) string {
	t.Helper()
	m := nextRE.FindStringSubmatch(b.get(path).body)
	if m == nil {
		t.Fatalf("%s has no next page", path)
	}
	return html.UnescapeString(m[1])
}
