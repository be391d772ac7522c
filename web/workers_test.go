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

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/web"
)

// stopForm matches the "Ask to stop" form of a live lease on the workers
// page, capturing the lease id.
var stopForm = regexp.MustCompile(`action="/p/acme/leases/([0-9a-f-]{36})/stop"`)

// liveLink matches the workers page's links to another page of live
// leases, capturing the address.
var liveLink = regexp.MustCompile(`href="(/p/acme/workers\?live=[^"]+)"`)

// TestWorkersLiveRefreshInterval: the workers page's live region is
// fetched again every Deps.LiveRefresh, which the page gives app.js in
// seconds (data-interval), 5 by default.
func TestWorkersLiveRefreshInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		refresh time.Duration
		want    string
	}{
		{"OKDefault", 0, `data-interval="5"`},
		{"OKConfigured", 250 * time.Millisecond, `data-interval="0.25"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, func(d *web.Deps) { d.LiveRefresh = tc.refresh })
			r := e.signIn(e.human).get("/p/acme/workers")
			wantStatus(t, r, http.StatusOK)
			if got := regexp.MustCompile(`data-refresh="[^"]*" data-interval="[^"]*"`).FindString(r.body); !strings.HasSuffix(got, tc.want) {
				t.Errorf("the live region is %q, want %s", got, tc.want)
			}
		})
	}
}

// TestWorkersPageLiveLeasesPaged: the workers page shows its live leases a
// page of 100 at a time (stale ones first, then by claim), with the count
// of all and a link to the next page; the region app.js fetches again every
// few seconds is that same page. It listed every live lease of the project
// on one page, fetched again every 5 s: 3,161 live leases made a page of
// 3.9 MB, downloaded every 5 s by each open tab.
func TestWorkersPageLiveLeasesPaged(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const n = 120
	for i := range n {
		e.mustItem(fmt.Sprintf("task %03d", i))
	}
	var claimed []string
	for i := range n - 1 {
		c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: fmt.Sprintf("w%03d", i), TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, c.Lease.ID.String())
	}
	// The last claim is stale (its lease expired an hour ago, not yet
	// swept): it comes first although it was claimed last.
	var dbNow time.Time
	if err := e.pool.QueryRow(ctx, "SELECT now()").Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	past := lease.NewService(e.pool, clock.NewStub(dbNow.Add(-2*time.Hour)), lease.Config{})
	stale, err := past.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: "w-stale", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)

	leasesOf := func(body string) []string {
		var ids []string
		for _, m := range stopForm.FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	r := b.get("/p/acme/workers")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, fmt.Sprintf(`Live leases <span class="count">%d</span>`, n), "100 of 120 live leases on this page")
	first := leasesOf(r.body)
	if len(first) != 100 {
		t.Fatalf("the first page shows %d live leases, want 100", len(first))
	}
	if first[0] != stale.Lease.ID.String() {
		t.Errorf("the first live lease shown is %s, want the stale one %s", first[0], stale.Lease.ID)
	}
	if want := claimed[:99]; strings.Join(first[1:], ",") != strings.Join(want, ",") {
		t.Errorf("after the stale lease the page shows %v, want the healthy ones in claim order %v", first[1:], want)
	}
	m := liveLink.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatal("the first page has no link to the next page of live leases")
	}
	next := html.UnescapeString(m[1])

	r = b.get(next)
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "20 of 120 live leases on this page")
	second := leasesOf(r.body)
	if strings.Join(second, ",") != strings.Join(claimed[99:], ",") {
		t.Errorf("the second page shows %v, want %v", second, claimed[99:])
	}
	if strings.Contains(r.body, "Next page") {
		t.Error("the last page links to a next page")
	}
	// The region fetched again every few seconds is this page, not the
	// first one.
	refresh := regexp.MustCompile(`data-refresh="([^"]+)"`).FindStringSubmatch(r.body)
	if refresh == nil {
		t.Fatal("the second page has no live region")
	}
	pr := b.get(html.UnescapeString(refresh[1]))
	wantStatus(t, pr, http.StatusOK)
	if got := leasesOf(pr.body); strings.Join(got, ",") != strings.Join(second, ",") {
		t.Errorf("the refreshed region of the second page shows %d leases %v, want the page's %v", len(got), got, second)
	}

	// Asking a lease of the second page to stop comes back to the second
	// page (it went back to the first).
	t.Run("StopReturnsToItsPage", func(t *testing.T) {
		cursor := strings.TrimPrefix(next, "/p/acme/workers?live=")
		if cursor, err = url.QueryUnescape(cursor); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.body, `name="live" value="`+html.EscapeString(cursor)+`"`) {
			t.Fatalf("the second page's stop forms do not carry the page (live=%s)", cursor)
		}
		resp := b.post("/p/acme/leases/"+second[0]+"/stop", url.Values{"back": {"/p/acme/workers"}, "live": {cursor}})
		wantStatus(t, resp, http.StatusSeeOther)
		if got, want := resp.Header.Get("Location"), "/p/acme/workers?live="+url.QueryEscape(cursor); got != want {
			t.Errorf("after asking to stop: redirected to %q, want the page it was asked on, %q", got, want)
		}
	})

	t.Run("ErrBadCursor", func(t *testing.T) {
		r := b.get("/p/acme/workers?live=garbage")
		wantStatus(t, r, http.StatusBadRequest)
		wantBody(t, r, "cursor")
	})
}

// workerRow matches a worker's row of the workers page's per-worker
// table, capturing its name; workersLink the table's link to its next
// page.
var (
	workerRow   = regexp.MustCompile(`<a class="worker-name" href="/p/acme/leases\?worker=([^"]+)"`)
	workersLink = regexp.MustCompile(`rel="next" href="(/p/acme/workers\?workers=[^"]+)">More workers`)
)

// TestWorkersPageWorkersPaged: the per-worker table of the workers page
// shows 100 workers at a time in name order, with a link to the next
// page: paging through 130 workers shows each once. It listed every
// worker that ever held a lease.
func TestWorkersPageWorkersPaged(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const n = 130
	for i := range n {
		e.mustItem(fmt.Sprintf("task %03d", i))
		c, err := e.leases.Claim(ctx, e.project.ID, lease.ClaimRequest{Worker: fmt.Sprintf("w%03d", (i*7)%n)})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := e.leases.Release(ctx, e.project.ID, lease.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := e.signIn(e.human)
	var seen []string
	path := "/p/acme/workers"
	for pages := 1; ; pages++ {
		r := b.get(path)
		wantStatus(t, r, http.StatusOK)
		var names []string
		for _, m := range workerRow.FindAllStringSubmatch(r.body, -1) {
			names = append(names, html.UnescapeString(m[1]))
		}
		if pages == 1 && len(names) != 100 {
			t.Fatalf("the first page shows %d workers, want 100", len(names))
		}
		seen = append(seen, names...)
		m := workersLink.FindStringSubmatch(r.body)
		if m == nil {
			break
		}
		if pages > 2 {
			t.Fatalf("a third page of workers after %d", len(seen))
		}
		path = html.UnescapeString(m[1])
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("w%03d", i)
	}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("the pages show %d workers %v, want each of %d once in name order", len(seen), seen, n)
	}
	// On the second page of workers, asking a live lease to stop, and the
	// live region app.js fetches again, keep that page of workers (they
	// went back to the first).
	t.Run("StopAndRefreshKeepThePage", func(t *testing.T) {
		cursor, err := url.QueryUnescape(strings.TrimPrefix(path, "/p/acme/workers?workers="))
		if err != nil {
			t.Fatal(err)
		}
		r := b.get(path)
		wantStatus(t, r, http.StatusOK)
		if !strings.Contains(r.body, `name="workers" value="`+html.EscapeString(cursor)+`"`) {
			t.Fatalf("the second page of workers' stop forms do not carry it (workers=%s)", cursor)
		}
		refresh := regexp.MustCompile(`data-refresh="([^"]+)"`).FindStringSubmatch(r.body)
		if refresh == nil {
			t.Fatal("the page has no live region")
		}
		if u, err := url.Parse(html.UnescapeString(refresh[1])); err != nil || u.Query().Get("workers") != cursor {
			t.Errorf("the live region is fetched from %q, which forgets workers=%s", refresh[1], cursor)
		}
		m := stopForm.FindStringSubmatch(r.body)
		if m == nil {
			t.Fatal("no live lease to ask to stop")
		}
		resp := b.post("/p/acme/leases/"+m[1]+"/stop", url.Values{"back": {"/p/acme/workers"}, "workers": {cursor}})
		wantStatus(t, resp, http.StatusSeeOther)
		if got, want := resp.Header.Get("Location"), "/p/acme/workers?workers="+url.QueryEscape(cursor); got != want {
			t.Errorf("after asking to stop: redirected to %q, want the page of workers it was asked on, %q", got, want)
		}
	})
	r := b.get("/p/acme/workers?workers=bogus")
	wantStatus(t, r, http.StatusBadRequest)
}
