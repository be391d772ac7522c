package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/demo"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/server"
)

// The browser tests drive Debian's headless Chromium against the real
// server (server.Start on port 0) and a real database.

// chromiumPath finds a Chromium binary, or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Skip("no chromium binary found (apt-get install -y chromium): skipping the browser tests")
	return ""
}

// The browser tests of this binary share one headless Chromium (a start
// costs seconds of CPU on a loaded machine): each test gets a browser
// context of its own (WithNewBrowserContext: its own cookies, storage and
// cache, like a fresh profile) and a tab in it. TestMain stops the browser.
var chromium struct {
	once sync.Once
	ctx  context.Context // the first tab, which owns the browser
	err  error
	stop func()
}

// startBrowser returns a tab context in a browser context of the test's
// own, closed when the test ends, on the binary's shared Chromium (started
// on first use).
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	chromium.once.Do(func() { chromium.err = launchBrowser(path) })
	if chromium.err != nil {
		t.Fatalf("start chromium: %v", chromium.err)
	}
	ctx, cancel := chromedp.NewContext(chromium.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // open the tab without a deadline
		t.Fatalf("open a tab: %v", err)
	}
	// The window's size, as the browser's flag gives the first window.
	step(t, ctx, chromedp.EmulateViewport(1360, 900))
	return ctx
}

// launchBrowser starts the shared Chromium with a fresh profile.
func launchBrowser(path string) error {
	dir, err := os.MkdirTemp("", "workgraph-web-chromium-")
	if err != nil {
		return err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1360, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	chromium.ctx = ctx
	chromium.stop = func() { cancel(); cancelAlloc(); os.RemoveAll(dir) }
	return chromedp.Do(ctx) // start the browser without a deadline
}

// TestMain runs the tests (dbtest.Main: then it drops their databases),
// then stops the shared browser if one started.
func TestMain(m *testing.M) {
	code := dbtest.Main(m)
	if chromium.stop != nil {
		chromium.stop()
	}
	os.Exit(code)
}

// step runs browser actions with a deadline.
func step(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// bootServer starts the real server on a fresh database; tune, when
// given, adjusts its config first.
func bootServer(t *testing.T, tune ...func(*server.Config)) *server.Server {
	t.Helper()
	ctx := context.Background()
	cfg := server.Config{
		DatabaseURL: dbtest.URL(t),
		Addr:        "127.0.0.1:0",
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, f := range tune {
		f(&cfg)
	}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	return srv
}

// apiCall is an agent's JSON call to the API.
func apiCall(t *testing.T, srv *server.Server, token, method, path string, in any, out any) {
	t.Helper()
	body, _ := json.Marshal(in)
	req, _ := http.NewRequest(method, srv.URL()+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

type apiItem struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	State string `json:"state"`
}

func TestBrowser(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	bg := context.Background()
	authSvc := auth.NewService(srv.Pool(), nil)
	graphSvc := graph.NewService(srv.Pool(), nil)
	project, err := graphSvc.CreateProject(bg, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	_, human, err := authSvc.Create(bg, &project.ID, "ada", auth.RoleHuman)
	if err != nil {
		t.Fatal(err)
	}
	_, agent, err := authSvc.Create(bg, &project.ID, "agent-e2e", auth.RoleAgent)
	if err != nil {
		t.Fatal(err)
	}

	// An agent, over the API: a small plan, a claim, and a question.
	var first, second, third, evil apiItem
	apiCall(t, srv, agent, "POST", "/v1/projects/e2e/items", map[string]any{"title": "Choose the database", "priority": 10}, &first)
	apiCall(t, srv, agent, "POST", "/v1/projects/e2e/items", map[string]any{"title": "Write the schema", "depends_on": []string{first.ID}}, &second)
	apiCall(t, srv, agent, "POST", "/v1/projects/e2e/items", map[string]any{"title": "Load the data", "depends_on": []string{second.ID}}, &third)
	evilTitle := `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`
	apiCall(t, srv, agent, "POST", "/v1/projects/e2e/items", map[string]any{"title": evilTitle}, &evil)
	var claim struct {
		Lease struct {
			ID    string `json:"id"`
			Epoch int64  `json:"epoch"`
		} `json:"lease"`
		Item apiItem `json:"item"`
	}
	apiCall(t, srv, agent, "POST", "/v1/projects/e2e/claims", map[string]any{"worker": "agent-e2e"}, &claim)
	if claim.Item.ID != first.ID {
		t.Fatalf("claimed %q, want the first item", claim.Item.Title)
	}
	apiCall(t, srv, agent, "POST", "/v1/leases/"+claim.Lease.ID+"/attention", map[string]any{
		"epoch": claim.Lease.Epoch, "question": "Which database should we use?",
		"suggested_answers": []string{"PostgreSQL", "SQLite"},
	}, nil)

	t.Run("APIKeepsProblemJSON", func(t *testing.T) {
		resp, err := http.Get(srv.URL() + "/v1/no/such/route")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("unknown API path: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		// And the API never takes the UI's cookie: only bearer tokens.
		req, _ := http.NewRequest("GET", srv.URL()+"/v1/projects/e2e/items", nil)
		req.AddCookie(&http.Cookie{Name: "wg_session", Value: "anything"})
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("API with a cookie: %d, want 401", resp.StatusCode)
		}
	})

	t.Run("SignInAndAnswer", func(t *testing.T) {
		step(t, ctx,
			signIn(srv, human, "/"),
			chromedp.WaitVisible(chromedp.CSS("article.request")),
		)
		// The live inbox fetches itself again once its stream opens (and
		// swaps its content in): click what that left, not a node it
		// replaces.
		waitJS(t, ctx, `document.body.getAttribute("data-stream") === "open"`)
		text := eval[string](t, ctx, `document.querySelector("article.request").innerText`)
		for _, want := range []string{"Which database should we use?", "Choose the database", "agent-e2e", "waiting"} {
			if !strings.Contains(text, want) {
				t.Errorf("inbox entry lacks %q:\n%s", want, text)
			}
		}
		step(t, ctx,
			chromedp.Click(chromedp.CSS(`button[name="suggested"][value="PostgreSQL"]`)),
			chromedp.WaitVisible(chromedp.ID("answered")),
		)
		answered := eval[string](t, ctx, `document.getElementById("answered").innerText`)
		if !strings.Contains(answered, "ready") || !strings.Contains(answered, "PostgreSQL") {
			t.Fatalf("after answering: %q", answered)
		}
		var item apiItem
		apiCall(t, srv, agent, "GET", "/v1/projects/e2e/items/"+first.ID, nil, &item)
		if item.State != "ready" {
			t.Fatalf("item state over the API = %s, want ready", item.State)
		}
	})

	t.Run("GraphSVG", func(t *testing.T) {
		step(t, ctx,
			chromedp.Navigate(srv.URL()+"/p/e2e/graph"),
			chromedp.WaitVisible(chromedp.CSS("#graph svg")),
		)
		n := eval[int](t, ctx, `document.querySelectorAll("#graph svg g.node").length`)
		if n != 4 {
			t.Errorf("graph has %d nodes, want 4", n)
		}
		for _, it := range []apiItem{first, second, third, evil} {
			href := eval[string](t, ctx, fmt.Sprintf(`(document.getElementById("n-%s")?.querySelector("a")?.getAttribute("xlink:href")) || ""`, it.ID))
			if href != "/p/e2e/items/"+it.ID {
				t.Errorf("node %s links to %q", it.Title, href)
			}
		}
		edges := eval[int](t, ctx, `document.querySelectorAll("#graph svg g.edge").length`)
		if edges != 2 {
			t.Errorf("graph has %d edges, want 2", edges)
		}
		// The item picture around the last item marks its critical path.
		step(t, ctx,
			chromedp.Navigate(srv.URL()+"/p/e2e/items/"+third.ID+"/graph"),
			chromedp.WaitVisible(chromedp.CSS("#graph svg")),
		)
		if c := eval[int](t, ctx, `document.querySelectorAll("#graph svg g.edge.critical").length`); c != 2 {
			t.Errorf("critical edges = %d, want 2", c)
		}
	})

	t.Run("ScriptTitleIsText", func(t *testing.T) {
		step(t, ctx,
			chromedp.Navigate(srv.URL()+"/p/e2e/items/"+evil.ID),
			chromedp.WaitVisible(chromedp.CSS("h1")),
		)
		if h1 := eval[string](t, ctx, `document.querySelector("h1").textContent`); h1 != evilTitle {
			t.Errorf("h1 = %q, want the title as text", h1)
		}
		if p := eval[int](t, ctx, `window.__pwned || 0`); p != 0 {
			t.Fatalf("the title ran as script (%d)", p)
		}
		// Only the site's own static scripts: every script element is one of
		// them by its src, none is inline.
		scripts := eval[string](t, ctx, `[...document.querySelectorAll("script")].map(s => (s.getAttribute("src") || "inline:" + s.textContent).split("?")[0]).join(" ")`)
		if scripts != "/static/app.js /static/reltime.js" {
			t.Errorf("script elements %q, want only app.js and reltime.js", scripts)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("main img").length`); n != 0 {
			t.Errorf("%d img elements in the page", n)
		}
		step(t, ctx, chromedp.Navigate(srv.URL()+"/p/e2e/items"), chromedp.WaitVisible(chromedp.CSS(".board")))
		if p := eval[int](t, ctx, `window.__pwned || 0`); p != 0 {
			t.Fatalf("the title ran as script on the board (%d)", p)
		}
		board := eval[string](t, ctx, `document.querySelector(".board").textContent`)
		if !strings.Contains(board, "<script>window.__pwned") {
			t.Errorf("the board does not show the title as text")
		}
	})

	t.Run("CrossSitePostRefused", func(t *testing.T) {
		// Even with the victim's valid CSRF token, a form posted from
		// another site is refused by the browser's own Sec-Fetch-Site/Origin.
		step(t, ctx, chromedp.Navigate(srv.URL()+"/p/e2e/items/new"), chromedp.WaitVisible(chromedp.ID("title")))
		csrf := eval[string](t, ctx, `document.querySelector("input[name=csrf]").value`)
		attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><body><form id="f" method="post" action="%s/p/e2e/items">
<input name="csrf" value="%s"><input name="title" value="forged by another site">
<button id="go" type="submit">win a prize</button></form></body>`, srv.URL(), html.EscapeString(csrf))
		}))
		defer attacker.Close()
		// localhost and 127.0.0.1 are different sites.
		attackURL := strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1)
		step(t, ctx,
			chromedp.Navigate(attackURL),
			chromedp.WaitVisible(chromedp.ID("go")),
			chromedp.Click(chromedp.ID("go")),
			chromedp.WaitVisible(chromedp.CSS("main .empty")),
		)
		text := eval[string](t, ctx, `document.body.innerText`)
		if !strings.Contains(text, "Cross-site request refused") {
			t.Fatalf("cross-site post answered:\n%s", text)
		}
		var n int
		if err := srv.Pool().QueryRow(bg, "SELECT count(*) FROM items WHERE title = 'forged by another site'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatal("the cross-site post created an item")
		}
	})
}

// TestScreenshots writes the README's screenshots of the demo project to
// docs/img when WORKGRAPH_SCREENSHOTS=1.
func TestScreenshots(t *testing.T) {
	if os.Getenv("WORKGRAPH_SCREENSHOTS") == "" {
		t.Skip("set WORKGRAPH_SCREENSHOTS=1 to write docs/img/*.png")
	}
	ctx := startBrowser(t)
	srv := bootServer(t)
	res, err := demo.Load(context.Background(), srv.Pool(), auth.NewService(srv.Pool(), nil))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join("..", "docs", "img")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	save := func(name string, png []byte) {
		if err := os.WriteFile(filepath.Join(out, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shot := func(sel string) []byte {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var png []byte
		var err error
		if sel == "" {
			png, err = chromedp.Run(tctx, chromedp.FullScreenshot(100))
		} else {
			png, err = chromedp.Run(tctx, chromedp.Screenshot(chromedp.CSS(sel)))
		}
		if err != nil {
			t.Fatal(err)
		}
		return png
	}
	step(t, ctx,
		chromedp.EmulateViewport(1360, 900),
		chromedp.Navigate(srv.URL()+"/signin"),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	save("signin.png", shot(""))
	step(t, ctx,
		chromedp.SendKeys(chromedp.ID("token"), res.Token),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS("article.request")),
	)
	save("inbox.png", shot(""))
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/demo/graph"), chromedp.WaitVisible(chromedp.CSS("#graph svg")))
	save("graph.png", shot(""))
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/demo/items"), chromedp.WaitVisible(chromedp.CSS(".board")))
	save("items.png", shot(""))
	id := eval[string](t, ctx, `[...document.querySelectorAll(".tile")].find(a => a.textContent.includes("Generate the API reference")).getAttribute("href")`)
	step(t, ctx, chromedp.Navigate(srv.URL()+id), chromedp.WaitVisible(chromedp.ID("leases")))
	save("item.png", shot(""))
	save("timeline.png", shot("#leases"))
	// A refused cycle: "Fix broken internal links" (a child of the wiki
	// migration) cannot wait for "Announce the launch", which waits for it.
	hrefOf := func(title string) string {
		return eval[string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll(".tile")].find(a => a.textContent.includes(%q)).getAttribute("href")`, title))
	}
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/demo/items"), chromedp.WaitVisible(chromedp.CSS(".board")))
	links, announce := hrefOf("Fix broken internal links"), hrefOf("Announce the launch")
	step(t, ctx,
		chromedp.Navigate(srv.URL()+links),
		chromedp.WaitVisible(chromedp.ID("depends_on")),
		chromedp.SendKeys(chromedp.ID("depends_on"), strings.TrimPrefix(announce, "/p/demo/items/")),
		chromedp.Submit(chromedp.ID("depends_on")),
		chromedp.WaitVisible(chromedp.ID("dependency-error")),
	)
	save("cycle.png", shot(""))
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/demo/workers"), chromedp.WaitVisible(chromedp.CSS("table")))
	save("workers.png", shot(""))
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/demo/leases"), chromedp.WaitVisible(chromedp.CSS("table")))
	save("history.png", shot(""))
}
