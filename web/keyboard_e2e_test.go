package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserSkipToContent: a keyboard user's first Tab on a page lands on
// a "Skip to the content" link, and Enter on it takes the focus into the
// page's <main>, so the next Tab reaches the page's first control (here
// an inbox answer box) instead of going through the top bar's links first
// on every page (the brand, the project, six navigation links: eight Tabs
// before the first answer box, on every page, before).
func TestBrowserSkipToContent(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	human, agent, _, claim := liveProject(t, srv, "keys")
	apiCall(t, srv, agent, "POST", "/v1/leases/"+claim.Lease.ID+"/attention", map[string]any{
		"epoch": claim.Lease.Epoch, "question": "MIT or Apache-2.0?",
	}, nil)
	step(t, ctx,
		signIn(srv, human, "/signin?next=/p/keys/inbox"),
		chromedp.WaitVisible(chromedp.CSS("article.request textarea")),
	)
	// The page as a keyboard user finds it: nothing focused yet.
	eval[bool](t, ctx, `document.activeElement && document.activeElement.blur(), true`)
	active := `(function () { var a = document.activeElement;
		return a.tagName + (a.id ? "#" + a.id : "") + " " + (a.textContent || "").trim().slice(0, 40); })()`
	visible := `(function () { var r = document.activeElement.getBoundingClientRect();
		return r.width > 1 && r.height > 1 && r.top >= 0 && r.left >= 0; })()`

	step(t, ctx, chromedp.KeyEvent(kb.Tab))
	if got := eval[string](t, ctx, active); got != "A Skip to the content" {
		t.Fatalf("the first Tab focuses %q, want the skip link", got)
	}
	if !eval[bool](t, ctx, visible) {
		t.Error("the focused skip link is not visible on the screen")
	}
	step(t, ctx, chromedp.KeyEvent(kb.Enter))
	waitJS(t, ctx, `document.activeElement && document.activeElement.tagName === "MAIN"`)
	step(t, ctx, chromedp.KeyEvent(kb.Tab))
	inMain := `(function () { var a = document.activeElement, m = document.querySelector("main");
		return a !== m && m.contains(a); })()`
	if !eval[bool](t, ctx, inMain) {
		t.Errorf("the Tab after the skip link focuses %q, outside the page's content", eval[string](t, ctx, active))
	}
}
