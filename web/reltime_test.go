package web_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/web"
)

// utcInstant is the absolute format the pages showed before relative times.
var (
	utcInstant = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC`)
	hoverText  = regexp.MustCompile(`<time [^>]*>[^<]*</time>|="[^"]*"|<title>[^<]*</title>`)
)

// TestPagesShowRelativeTimes: the pages render their times as <time>
// elements, relative to the request's now (a stub display clock here) and
// with the absolute instant in datetime and title; the page says which now
// it used (<html data-now>).
func TestPagesShowRelativeTimes(t *testing.T) {
	t.Parallel()
	// The display clock (not the domain's: the services keep the
	// database's), set below once the question's time is known.
	display := &clock.Stub{}
	e := setup(t, func(d *web.Deps) { d.Local = func() time.Time { return *display.Now() } })
	ctx := context.Background()
	it := e.mustItem("Pick a colour") // created just before the question: the same minutes ago
	c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-7"})
	if err != nil {
		t.Fatal(err)
	}
	ask, err := e.leases.Ask(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, attention.NewRequest{Question: "Blue or green?", Blocking: true})
	if err != nil {
		t.Fatal(err)
	}
	now := ask.Request.CreatedAt.Add(4*time.Minute + 10*time.Second)
	display.Set(now)
	b := e.signIn(e.human)
	element := func(at time.Time, text string) string {
		u := at.UTC()
		return `<time datetime="` + u.Format(time.RFC3339) + `" title="` + u.Format("2006-01-02 15:04:05 UTC") + `" data-rel>` + text + `</time>`
	}

	t.Run("Inbox", func(t *testing.T) {
		r := b.get("/p/acme/inbox")
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, element(ask.Request.CreatedAt, "4 min ago"), `<html lang="en" data-now="`+now.UTC().Format(time.RFC3339Nano)+`">`)
	})
	t.Run("Item", func(t *testing.T) {
		r := b.get("/p/acme/items/" + it.ID.String())
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, element(it.CreatedAt, "4 min ago"), element(ask.Request.CreatedAt, "4 min ago"))
	})
	t.Run("WorkersFutureExpiry", func(t *testing.T) {
		// The lease ended when it asked; a new one is live.
		e.mustItem("Mix the paint")
		c2, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "agent-8"})
		if err != nil {
			t.Fatal(err)
		}
		display.Set(c2.Lease.ExpiresAt.Add(-3 * time.Hour))
		r := b.get("/p/acme/workers")
		wantStatus(t, r, http.StatusOK)
		wantBody(t, r, element(c2.Lease.ExpiresAt, "in 3 h"))
	})
	t.Run("EveryTimeIsAnElement", func(t *testing.T) {
		// No page prints the old absolute format outside a title attribute.
		for _, path := range []string{"/p/acme/inbox", "/p/acme/items?view=list", "/p/acme/items/" + it.ID.String(), "/p/acme/leases", "/p/acme/workers"} {
			r := b.get(path)
			wantStatus(t, r, http.StatusOK)
			if !strings.Contains(r.body, "<time datetime=") {
				t.Errorf("%s shows no <time datetime=", path)
			}
			// What is left after the <time> elements, attribute values
			// (hover titles) and SVG <title>s (a timeline bar's hover text).
			rest := hoverText.ReplaceAllString(r.body, "")
			if m := utcInstant.FindString(rest); m != "" {
				t.Errorf("%s shows the absolute time %s outside a <time> element", path, m)
			}
		}
	})
}
