package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/auth"
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
