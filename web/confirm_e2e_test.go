package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserAskToStopConfirms: "Ask to stop" on the workers page cannot
// be taken back (the worker is told on its next heartbeat), and it sits in
// a region that refreshes itself and puts stale leases first, so a click
// can land on another row than the one read: it asks first, naming the
// worker and the item, and declined it asks nothing of the worker.
func TestBrowserAskToStopConfirms(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	human, _, _, claim := liveProject(t, srv, "halt")
	stop := `[data-refresh] form[action$="/stop"] button`
	step(t, ctx,
		signIn(srv, human, "/signin?next=/p/halt/workers"),
		chromedp.WaitVisible(chromedp.CSS(stop)),
	)
	// The dialog is answered "no" by the page itself, which records it.
	eval[bool](t, ctx, `window.__asked = []; window.confirm = function (m) { window.__asked.push(m); return false; }, true`)
	step(t, ctx, chromedp.Click(chromedp.CSS(stop)))
	// A form sent leaves the page (its redirect comes back to a new one,
	// without the recorder): give it 2 s to do so, then the page must be
	// the same.
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, _ = chromedp.Run(wctx, chromedp.Poll[bool](`window.__asked === undefined`, chromedp.WithPollingInterval(20*time.Millisecond)))
	cancel()
	if !eval[bool](t, ctx, `window.__asked !== undefined`) {
		t.Fatal("Ask to stop was sent without asking")
	}
	asked := eval[[]string](t, ctx, `window.__asked`)
	if len(asked) != 1 || asked[0] != "Ask bot to stop working on “Pick a licence”?" {
		t.Errorf("Ask to stop asked %q, want one question naming the worker and the item", asked)
	}
	var requested bool
	if err := srv.Pool().QueryRow(context.Background(),
		`SELECT stop_requested_at IS NOT NULL FROM leases WHERE id = $1`, claim.Lease.ID).Scan(&requested); err != nil {
		t.Fatal(err)
	}
	if requested {
		t.Error("a stop declined in the dialog was requested of the worker")
	}
}
