package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/server"
)

// TestBrowserLiveInbox: with the inbox open (Inbox zero), an agent asks a
// question over the API; the question appears in the open page, without a
// reload, highlighted, the badge follows, and answering it from the page
// works. The delay from the agent's call to the question on screen is
// logged (the bound is a second; it is not asserted as a time).
func TestBrowserLiveInbox(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	human, agent, it, claim := liveProject(t, srv, "live")

	step(t, ctx,
		signIn(srv, human, "/signin?next=/p/live/inbox"),
		chromedp.WaitVisible(chromedp.CSS("main .empty")),
	)
	if text := eval[string](t, ctx, `document.querySelector("main").innerText`); !strings.Contains(text, "Inbox zero") {
		t.Fatalf("the inbox before the question: %q", text)
	}
	// A mark on the page's window: a reload would lose it. Wait for the
	// stream to be open before asking.
	eval[bool](t, ctx, `window.__noReload = true`)
	waitJS(t, ctx, `document.body.getAttribute("data-stream") === "open"`)

	asked := time.Now()
	var ask struct {
		Attention struct {
			ID string `json:"id"`
		} `json:"attention"`
	}
	apiCall(t, srv, agent, "POST", "/v1/leases/"+claim.Lease.ID+"/attention", map[string]any{
		"epoch": claim.Lease.Epoch, "question": "MIT or Apache-2.0?", "suggested_answers": []string{"MIT", "Apache-2.0"},
	}, &ask)
	step(t, ctx, chromedp.WaitVisible(chromedp.CSS("main article.request")))
	t.Logf("the question appeared %s after the agent asked", time.Since(asked).Round(time.Millisecond))

	if !eval[bool](t, ctx, `window.__noReload === true`) {
		t.Fatal("the page was reloaded")
	}
	if text := eval[string](t, ctx, `document.querySelector("main article.request").innerText`); !strings.Contains(text, "MIT or Apache-2.0?") {
		t.Fatalf("the new request: %q", text)
	}
	if !eval[bool](t, ctx, `document.querySelector("main article.request").classList.contains("fresh")`) {
		t.Error("the new request is not highlighted")
	}
	if eval[bool](t, ctx, `!!document.querySelector("main .empty")`) {
		t.Error("Inbox zero is still shown")
	}
	// Another change refreshes the page again (events come in bursts):
	// the new request keeps its highlight, not restarted. (A change that
	// leaves the inbox as it was does not replace it at all:
	// TestBrowserLiveRefreshKeepsPlace.)
	eval[bool](t, ctx, `document.querySelector("main article.request").setAttribute("data-before", "1"), true`)
	apiCall(t, srv, agent, "POST", "/v1/projects/live/items", map[string]any{"title": "Write the notice"}, &apiItem{})
	var next liveLease
	apiCall(t, srv, agent, "POST", "/v1/projects/live/claims", map[string]any{"worker": "bot"}, &next)
	apiCall(t, srv, agent, "POST", "/v1/leases/"+next.Lease.ID+"/attention", map[string]any{
		"epoch": next.Lease.Epoch, "question": "Which year goes in the notice?",
	}, nil)
	waitJS(t, ctx, `!document.querySelector("main article.request").hasAttribute("data-before")`)
	if !eval[bool](t, ctx, `document.querySelector("main article.request").classList.contains("fresh")`) {
		t.Error("the new request lost its highlight when the page was refreshed again")
	}
	waitJS(t, ctx, `document.querySelector('[data-live="attention"]').textContent === "2"`)

	step(t, ctx,
		chromedp.Click(chromedp.CSS(`button[name="suggested"][value="MIT"]`)),
		chromedp.WaitVisible(chromedp.ID("answered")),
	)
	var got apiItem
	apiCall(t, srv, agent, "GET", "/v1/projects/live/items/"+it.ID, nil, &got)
	if got.State != "ready" {
		t.Fatalf("after the answer from the page the item is %s, want ready", got.State)
	}
	// The answer stored is the one clicked, by the person signed in.
	var req struct {
		State      string  `json:"state"`
		Answer     *string `json:"answer"`
		ResolvedBy *string `json:"resolved_by"`
	}
	apiCall(t, srv, agent, "GET", "/v1/attention/"+ask.Attention.ID, nil, &req)
	if req.State != "resolved" || req.Answer == nil || *req.Answer != "MIT" || req.ResolvedBy == nil || !strings.Contains(*req.ResolvedBy, "ada") {
		t.Fatalf("after the answer from the page the request is %+v (answer %v, by %v), want resolved with MIT by ada",
			req, deref(req.Answer), deref(req.ResolvedBy))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// signIn signs token in through the sign-in form at path (a page that
// shows it, e.g. "/signin?next=/p/x/inbox") and submits it.
func signIn(srv *server.Server, token, path string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(srv.URL()+path),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("token")),
	)
}

// waitJS polls a JavaScript condition in the page until it holds (30 s
// at most).
func waitJS(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s: %v", cond, err)
	}
}

// TestBrowserLiveInboxAskedBeforeStream: a question asked after the inbox
// was rendered but before its event stream connected (the stream starts
// at the log's horizon, past the question's event) still appears, without
// a reload: the page is fetched again once its stream is open.
func TestBrowserLiveInboxAskedBeforeStream(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	human, agent, _, claim := liveProject(t, srv, "late")
	// The page's EventSource connects only when the test says so.
	hold := chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
(function () {
  var Real = window.EventSource;
  window.EventSource = function (url, opts) {
    var held = { listeners: [] };
    held.addEventListener = function (t, f) { held.listeners.push([t, f]); };
    window.__connect = function () {
      var es = new Real(url, opts);
      es.onmessage = held.onmessage; es.onopen = held.onopen; es.onerror = held.onerror;
      held.listeners.forEach(function (l) { es.addEventListener(l[0], l[1]); });
    };
    return held;
  };
})();`})
		return err
	})
	step(t, ctx, hold,
		signIn(srv, human, "/signin?next=/p/late/inbox"),
		chromedp.WaitVisible(chromedp.CSS("main .empty")),
	)
	waitJS(t, ctx, `typeof window.__connect === "function"`)
	eval[bool](t, ctx, `window.__noReload = true`)
	apiCall(t, srv, agent, "POST", "/v1/leases/"+claim.Lease.ID+"/attention", map[string]any{
		"epoch": claim.Lease.Epoch, "question": "MIT or Apache-2.0?",
	}, nil)
	eval[bool](t, ctx, `window.__connect(), true`)
	waitJS(t, ctx, `document.body.getAttribute("data-stream") === "open"`)
	waitJS(t, ctx, `!!document.querySelector("main article.request")`)
	if !eval[bool](t, ctx, `window.__noReload === true`) {
		t.Fatal("the page was reloaded")
	}
}

// TestBrowserLiveAllProjectsInbox: an admin's inbox across every project
// (/inbox) follows the event log too: a question asked in any project
// appears without a reload.
func TestBrowserLiveAllProjectsInbox(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	bg := context.Background()
	project, err := graph.NewService(srv.Pool(), nil).CreateProject(bg, "far")
	if err != nil {
		t.Fatal(err)
	}
	authSvc := auth.NewService(srv.Pool(), nil)
	_, root, err := authSvc.Create(bg, nil, "root", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	_, agent, err := authSvc.Create(bg, &project.ID, "bot", auth.RoleAgent)
	if err != nil {
		t.Fatal(err)
	}
	apiCall(t, srv, agent, "POST", "/v1/projects/far/items", map[string]any{"title": "Pick a licence"}, &apiItem{})
	var claim struct {
		Lease struct {
			ID    string `json:"id"`
			Epoch int64  `json:"epoch"`
		} `json:"lease"`
	}
	apiCall(t, srv, agent, "POST", "/v1/projects/far/claims", map[string]any{"worker": "bot"}, &claim)
	step(t, ctx,
		signIn(srv, root, "/signin?next=/inbox"),
		chromedp.WaitVisible(chromedp.CSS("main .empty")),
	)
	eval[bool](t, ctx, `window.__noReload = true`)
	waitJS(t, ctx, `document.body.getAttribute("data-stream") === "open"`)
	apiCall(t, srv, agent, "POST", "/v1/leases/"+claim.Lease.ID+"/attention", map[string]any{
		"epoch": claim.Lease.Epoch, "question": "MIT or Apache-2.0?",
	}, nil)
	waitJS(t, ctx, `!!document.querySelector("main article.request")`)
	if text := eval[string](t, ctx, `document.querySelector("main article.request").innerText`); !strings.Contains(text, "MIT or Apache-2.0?") {
		t.Fatalf("the new request: %q", text)
	}
	if !eval[bool](t, ctx, `window.__noReload === true`) {
		t.Fatal("the page was reloaded")
	}
}

// liveLease is the lease of liveProject's claim.
type liveLease struct {
	Lease struct {
		ID    string `json:"id"`
		Epoch int64  `json:"epoch"`
	} `json:"lease"`
}

// liveProject makes the project name with a human ("ada") and an agent
// ("bot") token, and an item "Pick a licence" the agent has claimed: the
// start of the live-inbox tests.
func liveProject(t *testing.T, srv *server.Server, name string) (human, agent string, it apiItem, claim liveLease) {
	t.Helper()
	bg := context.Background()
	project, err := graph.NewService(srv.Pool(), nil).CreateProject(bg, name)
	if err != nil {
		t.Fatal(err)
	}
	authSvc := auth.NewService(srv.Pool(), nil)
	if _, human, err = authSvc.Create(bg, &project.ID, "ada", auth.RoleHuman); err != nil {
		t.Fatal(err)
	}
	if _, agent, err = authSvc.Create(bg, &project.ID, "bot", auth.RoleAgent); err != nil {
		t.Fatal(err)
	}
	apiCall(t, srv, agent, "POST", "/v1/projects/"+name+"/items", map[string]any{"title": "Pick a licence"}, &it)
	apiCall(t, srv, agent, "POST", "/v1/projects/"+name+"/claims", map[string]any{"worker": "bot"}, &claim)
	return human, agent, it, claim
}

// TestBrowserLiveRefreshKeepsPlace: the live inbox refreshes itself
// without taking the person's place away. A change that leaves the inbox
// as it was does not replace it; a change that does keeps the control
// that had the focus focused and a section opened open; and a press not
// yet released holds the refresh until its click has landed.
func TestBrowserLiveRefreshKeepsPlace(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	human, agent, _, claim := liveProject(t, srv, "place")
	var first struct {
		Attention struct {
			ID string `json:"id"`
		} `json:"attention"`
	}
	apiCall(t, srv, agent, "POST", "/v1/leases/"+claim.Lease.ID+"/attention", map[string]any{
		"epoch": claim.Lease.Epoch, "question": "MIT or Apache-2.0?", "suggested_answers": []string{"MIT", "Apache-2.0"},
		"context": map[string]any{"files": []string{"LICENSE"}},
	}, &first)
	apiCall(t, srv, agent, "POST", "/v1/projects/place/items", map[string]any{"title": "Name the release"}, &apiItem{})
	var second liveLease
	apiCall(t, srv, agent, "POST", "/v1/projects/place/claims", map[string]any{"worker": "bot"}, &second)

	step(t, ctx,
		signIn(srv, human, "/signin?next=/p/place/inbox"),
		chromedp.WaitVisible(chromedp.CSS("main article.request")),
	)
	waitJS(t, ctx, `document.body.getAttribute("data-stream") === "open"`)
	req := `document.getElementById("req-` + first.Attention.ID + `")`
	eval[bool](t, ctx, req+`.querySelector("details").open = true, true`)
	eval[bool](t, ctx, req+`.querySelector('button[name="suggested"][value="MIT"]').focus(), true`)
	eval[bool](t, ctx, req+`.setAttribute("data-before", "1"), true`)
	refreshed := func() int {
		return int(eval[float64](t, ctx, `parseInt(document.body.getAttribute("data-refreshed") || "0", 10)`))
	}

	t.Run("UnchangedIsNotReplaced", func(t *testing.T) {
		before := refreshed()
		apiCall(t, srv, agent, "POST", "/v1/projects/place/items", map[string]any{"title": "Write the notice"}, &apiItem{})
		waitJS(t, ctx, `parseInt(document.body.getAttribute("data-refreshed") || "0", 10) > `+strconv.Itoa(before))
		if !eval[bool](t, ctx, req+`.hasAttribute("data-before")`) {
			t.Error("the inbox was replaced although the new item changed nothing on it")
		}
	})

	t.Run("ChangedKeepsFocusAndOpenSections", func(t *testing.T) {
		apiCall(t, srv, agent, "POST", "/v1/leases/"+second.Lease.ID+"/attention", map[string]any{
			"epoch": second.Lease.Epoch, "question": "Which name?",
		}, nil)
		waitJS(t, ctx, `document.querySelectorAll("main article.request").length === 2`)
		if eval[bool](t, ctx, req+`.hasAttribute("data-before")`) {
			t.Fatal("the inbox was not replaced by the page with the new question")
		}
		if !eval[bool](t, ctx, req+`.querySelector("details").open`) {
			t.Error("the context the person opened was closed by the refresh")
		}
		focus := eval[string](t, ctx, `(function () { var a = document.activeElement;
			return a.tagName + " " + (a.value || "") + " " + ((a.closest("article") || {}).id || ""); })()`)
		if want := "BUTTON MIT req-" + first.Attention.ID; focus != want {
			t.Errorf("the focus after the refresh is on %q, want %q", focus, want)
		}
	})

	t.Run("PressHoldsTheRefresh", func(t *testing.T) {
		eval[bool](t, ctx, req+`.setAttribute("data-before", "1"), true`)
		eval[bool](t, ctx, req+`.querySelector('button[value="Apache-2.0"]').dispatchEvent(
			new PointerEvent("pointerdown", { bubbles: true })), true`)
		before := refreshed()
		// Another person dismisses the second question: the inbox changes.
		var list struct {
			Attention []struct {
				ID string `json:"id"`
			} `json:"attention"`
		}
		apiCall(t, srv, human, "GET", "/v1/projects/place/attention?state=open", nil, &list)
		for _, r := range list.Attention {
			if r.ID != first.Attention.ID {
				apiCall(t, srv, human, "POST", "/v1/attention/"+r.ID+"/dismiss", map[string]any{"note": "later"}, nil)
			}
		}
		waitJS(t, ctx, `parseInt(document.body.getAttribute("data-refreshed") || "0", 10) > `+strconv.Itoa(before))
		if !eval[bool](t, ctx, req+`.hasAttribute("data-before")`) {
			t.Fatal("the inbox was replaced under a press not yet released")
		}
		eval[bool](t, ctx, `document.dispatchEvent(new PointerEvent("pointerup", { bubbles: true })), true`)
		waitJS(t, ctx, `document.querySelectorAll("main article.request").length === 1`)
	})
}

// workersRefresh is the workers page's refresh in
// TestBrowserWorkersRefreshKeepsFocus (the default is 5 s), and
// workersRefreshBound how long the test waits for one at most: well
// above the period on a loaded machine, well below the default.
const (
	workersRefresh      = 200 * time.Millisecond
	workersRefreshBound = 3 * time.Second
)

// TestBrowserWorkersRefreshKeepsFocus: the workers page's live leases
// (a region fetched every few seconds: here every workersRefresh, the
// server's LiveRefresh) are not replaced when nothing but their times
// changed, and when they are, the control that had the focus (a keyboard
// user on "Ask to stop") keeps it.
func TestBrowserWorkersRefreshKeepsFocus(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t, func(c *server.Config) { c.LiveRefresh = workersRefresh })
	human, agent, _, claim := liveProject(t, srv, "crew")
	step(t, ctx,
		signIn(srv, human, "/signin?next=/p/crew/workers"),
		chromedp.WaitVisible(chromedp.CSS(`[data-refresh] form[action$="/stop"] button`)),
	)
	waitJS(t, ctx, `document.body.getAttribute("data-stream") === "open"`)
	button := `document.querySelector('[data-refresh] form[action$="/stop"] button')`
	eval[bool](t, ctx, button+`.focus(), true`)
	eval[bool](t, ctx, button+`.setAttribute("data-before", "1"), true`)
	refreshes := func() int {
		return int(eval[float64](t, ctx, `parseInt(document.querySelector("[data-refresh]").getAttribute("data-refreshed") || "0", 10)`))
	}
	waitRefresh := func(after int) {
		t.Helper()
		waitJS(t, ctx, `parseInt(document.querySelector("[data-refresh]").getAttribute("data-refreshed") || "0", 10) > `+strconv.Itoa(after))
	}
	focused := `(function () { var a = document.activeElement;
		return a.tagName + " " + ((a.form && a.form.getAttribute("action")) || ""); })()`
	want := "BUTTON /p/crew/leases/" + claim.Lease.ID + "/stop"

	// The region follows the server's setting, not a fixed 5 s: the page
	// gives the period, and the next refresh comes well before 5 s.
	if got := eval[string](t, ctx, `document.querySelector("[data-refresh]").getAttribute("data-interval")`); got != "0.2" {
		t.Errorf("the live region's data-interval is %q, want the server's %s as 0.2", got, workersRefresh)
	}
	start := time.Now()
	waitRefresh(refreshes())
	if waited := time.Since(start); waited > workersRefreshBound {
		t.Errorf("the live leases were refreshed after %s, want every %s (within %s)", waited, workersRefresh, workersRefreshBound)
	}
	if !eval[bool](t, ctx, button+`.hasAttribute("data-before")`) {
		t.Error("the live leases were replaced although only their times changed")
	}
	if got := eval[string](t, ctx, focused); got != want {
		t.Errorf("the focus after a refresh is on %q, want %q", got, want)
	}

	// A heartbeat changes the lease's row (its count of heartbeats).
	apiCall(t, srv, agent, "POST", "/v1/leases/"+claim.Lease.ID+"/heartbeat", map[string]any{"epoch": claim.Lease.Epoch}, nil)
	waitJS(t, ctx, `!`+button+`.hasAttribute("data-before")`)
	if got := eval[string](t, ctx, focused); got != want {
		t.Errorf("the focus after the row changed is on %q, want %q", got, want)
	}
}
