package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestInboxOverdueFirst: an overdue question is marked and shown before
// older ones that are not.
func TestInboxOverdueFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	ask := func(title, question string, due time.Duration) {
		t.Helper()
		e.mustItem(title)
		c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.leases.Ask(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch},
			attention.NewRequest{Question: question, Blocking: true, DueIn: due}); err != nil {
			t.Fatal(err)
		}
	}
	ask("Old", "Older question?", 0)
	ask("Late", "Late question?", time.Minute)
	later := attention.NewService(e.pool, clock.NewStub(time.Now().Add(time.Hour)), attention.Config{})
	if n, err := attention.NewDeadlineSweeper(later, 0, nil).RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("deadline sweep: %d, %v", n, err)
	}
	r := e.signIn(e.human).get("/p/acme/inbox")
	wantBody(t, r, "Older question?", "Late question?", `class="label overdue"`)
	body := r.body
	if strings.Index(body, "Late question?") > strings.Index(body, "Older question?") {
		t.Fatal("the overdue question is not shown first")
	}
}

// TestInboxOverdueBeyondFirstPage: an overdue question newer than the 50
// oldest open requests (the inbox shows 50) is still shown, first: it
// used to be left out with the newer ones until older ones were answered.
func TestInboxOverdueBeyondFirstPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for i := range 50 {
		it := e.mustItem("held " + strconv.Itoa(i))
		if _, err := e.att.Hold(ctx, e.project.ID, it.ID, "wait "+strconv.Itoa(i), "token:t-human"); err != nil {
			t.Fatal(err)
		}
	}
	e.mustItem("Late")
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.leases.Ask(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch},
		attention.NewRequest{Question: "Late question?", Blocking: true, DueIn: time.Minute}); err != nil {
		t.Fatal(err)
	}
	later := attention.NewService(e.pool, clock.NewStub(time.Now().Add(time.Hour)), attention.Config{})
	if n, err := attention.NewDeadlineSweeper(later, 0, nil).RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("deadline sweep: %d, %v", n, err)
	}
	r := e.signIn(e.human).get("/p/acme/inbox")
	wantBody(t, r, "Late question?", `class="label overdue"`, "wait 0", "50 of 51 open requests on this page, 1 overdue", `rel="next" href="/p/acme/inbox?after=`)
	if i, j := strings.Index(r.body, "Late question?"), strings.Index(r.body, "wait 0"); i < 0 || j < 0 || i > j {
		t.Fatal("the overdue question is not shown first")
	}
	if n := strings.Count(r.body, `<article class="request`); n != 50 {
		t.Fatalf("the inbox shows %d requests, want 50", n)
	}
	if strings.Contains(r.body, "wait 49<") {
		t.Fatal("the inbox shows 51 requests")
	}
}

// TestInboxAnswerComesBackToItsPage: a request answered on the inbox's
// second page comes back to that page (its cursor in the form and in the
// redirect), not to the first, where the person would have to page again.
func TestInboxAnswerComesBackToItsPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	q := askBehindFifty(t, e, "On page two?")
	b := e.signIn(e.human)
	first := b.get("/p/acme/inbox")
	m := regexp.MustCompile(`rel="next" href="/p/acme/inbox\?after=([^"]+)"`).FindStringSubmatch(first.body)
	if m == nil {
		t.Fatal("the first page has no link to the next")
	}
	cursor, err := url.QueryUnescape(html.UnescapeString(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	second := b.get("/p/acme/inbox?after=" + url.QueryEscape(cursor))
	wantBody(t, second, "On page two?", `name="after" value="`+htmlText(t, cursor)+`"`)
	r := b.post("/p/acme/attention/"+q.Request.ID.String()+"/resolve", url.Values{
		"back": {"/p/acme/inbox"}, "after": {cursor}, "answer": {"yes"},
	})
	wantStatus(t, r, http.StatusSeeOther)
	loc, err := url.Parse(r.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if loc.Path != "/p/acme/inbox" || loc.Query().Get("after") != cursor || loc.Query().Get("answered") != q.Request.ID.String() {
		t.Fatalf("the answer went to %s, want the second page (after=%s) saying what was answered", loc, cursor)
	}
	// A cursor that is not one is not carried.
	r = b.post("/p/acme/attention/"+q.Request.ID.String()+"/resolve", url.Values{
		"back": {"/p/acme/inbox"}, "after": {"not-a-cursor"}, "answer": {"yes"},
	})
	if loc := r.Header.Get("Location"); strings.Contains(loc, "not-a-cursor") {
		t.Fatalf("a bad cursor was carried into %s", loc)
	}
}

// TestInboxOpensAtRequest: the inbox at ?req=<id>, the page a
// notification's answer link opens, shows that request however many
// older ones wait before it (the inbox shows 50 a page, oldest first: the
// first page did not have it, and its #req- anchor led nowhere), and an
// answer given there comes back to that page.
func TestInboxOpensAtRequest(t *testing.T) {
	t.Parallel()
	e := setup(t)
	q := askBehindFifty(t, e, "Where does it land?")
	b := e.signIn(e.human)
	r := b.get("/p/acme/inbox?req=" + q.Request.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Where does it land?", `id="req-`+q.Request.ID.String()+`"`, "← First page")
	m := regexp.MustCompile(`name="after" value="([^"]+)"`).FindStringSubmatch(r.body)
	if m == nil {
		t.Fatal("the page's forms carry no cursor to come back to it")
	}
	// An unknown or malformed request: the first page, as ever.
	wantStatus(t, b.get("/p/acme/inbox?req="+uuid.NewString()), http.StatusOK)
	wantStatus(t, b.get("/p/acme/inbox?req=nope"), http.StatusBadRequest)
}

// askBehindFifty opens 50 holds in e's project, then has an agent ask a
// blocking question: the inbox, 50 a page oldest first, shows it on its
// second page.
func askBehindFifty(t *testing.T, e *env, question string) lease.AskResult {
	t.Helper()
	ctx := context.Background()
	for i := range 50 {
		it := e.mustItem("held " + strconv.Itoa(i))
		if _, err := e.att.Hold(ctx, e.project.ID, it.ID, "wait "+strconv.Itoa(i), "token:t-human"); err != nil {
			t.Fatal(err)
		}
	}
	e.mustItem("Asked last")
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.leases.Ask(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch},
		attention.NewRequest{Question: question, Blocking: true})
	if err != nil {
		t.Fatal(err)
	}
	return q
}
