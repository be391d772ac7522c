package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/demo"
)

// emulateColorScheme makes the tab's prefers-color-scheme "dark" or
// "light" (Emulation.setEmulatedMedia: what DevTools' rendering panel does).
func emulateColorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
}

// demoPages signs in to the demo project and returns the paths of the
// pages the phone and dark tests visit, by name.
func demoPages(t *testing.T, ctx context.Context, srvURL, token string) [][2]string {
	t.Helper()
	// Separate steps, each with its own deadline: a loaded machine may
	// take a while over each.
	step(t, ctx, chromedp.Navigate(srvURL+"/signin"), chromedp.WaitVisible(chromedp.ID("token")))
	step(t, ctx, chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Submit(chromedp.ID("token")))
	step(t, ctx, chromedp.WaitVisible(chromedp.CSS("article.request")))
	step(t, ctx, chromedp.Navigate(srvURL+"/p/demo/items"), chromedp.WaitVisible(chromedp.CSS(".board")))
	item := eval[string](t, ctx, `[...document.querySelectorAll(".tile")].find(a => a.textContent.includes("Generate the API reference")).getAttribute("href")`)
	return [][2]string{
		{"inbox", "/p/demo/inbox"},
		{"items", "/p/demo/items"},
		{"items list", "/p/demo/items?view=list"},
		{"item", item},
		{"history", "/p/demo/leases"},
		{"graph", "/p/demo/graph"},
		{"workers", "/p/demo/workers"},
	}
}

// TestBrowserLook checks, in one browser on the demo project, the phone
// layout and the dark scheme of the pages.
func TestBrowserLook(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	res, err := demo.Load(context.Background(), srv.Pool(), auth.NewService(srv.Pool(), nil))
	if err != nil {
		t.Fatal(err)
	}
	pages := demoPages(t, ctx, srv.URL(), res.Token)
	t.Run("Phone", func(t *testing.T) { testPhone(t, ctx, srv.URL(), pages) })
	step(t, ctx, chromedp.EmulateViewport(1360, 900))
	t.Run("Dark", func(t *testing.T) { testDark(t, ctx, srv.URL(), pages) })
	t.Run("TextContrast", func(t *testing.T) { testTextContrast(t, ctx, srv.URL(), pages) })
}

// lowContrastText lists (up to 8) the visible texts of the page whose
// colour has less than 4.5:1 contrast on the background they are drawn on
// (the nearest ancestor's background colours blended over white), with
// their contrast; the graph's SVG and disabled controls are left out.
const lowContrastText = `(() => {
  const parse = c => { const v = (c.match(/[\d.]+/g) || []).map(Number); return v.length < 3 ? null : {r: v[0], g: v[1], b: v[2], a: v.length > 3 ? v[3] : 1}; };
  const lum = c => [c.r, c.g, c.b].map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); }).reduce((s, x, i) => s + x * [0.2126, 0.7152, 0.0722][i], 0);
  const over = (c, b) => ({r: c.r * c.a + b.r * (1 - c.a), g: c.g * c.a + b.g * (1 - c.a), b: c.b * c.a + b.b * (1 - c.a)});
  const background = el => {
    const layers = [];
    for (; el; el = el.parentElement) {
      const c = parse(getComputedStyle(el).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    return layers.reduceRight((b, c) => over(c, b), {r: 255, g: 255, b: 255});
  };
  const out = [], walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walk.nextNode()) && out.length < 8;) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el || el.closest("svg, option, datalist, [disabled]") || !el.getClientRects().length) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === "hidden") continue;
    const bg = background(el), fg = over(parse(cs.color), bg);
    const a = lum(fg), b = lum(bg), ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) out.push(el.tagName.toLowerCase() + "." + el.className + " " + JSON.stringify(n.textContent.trim().slice(0, 20)) + " " + ratio.toFixed(2) + ":1");
  }
  return out.join("; ");
})()`

// testTextContrast: in the light scheme and the dark one, every text of
// the pages keeps at least 4.5:1 contrast on its background (docs/web.md),
// the weakest greys and a navigation counter at zero included (the
// workers counter, blue, kept its zero's grey text on blue: 1.8:1).
func testTextContrast(t *testing.T, ctx context.Context, srvURL string, pages [][2]string) {
	for _, scheme := range []string{"light", "dark"} {
		step(t, ctx, emulateColorScheme(scheme))
		for _, pg := range pages {
			t.Run(scheme+" "+pg[0], func(t *testing.T) {
				step(t, ctx, chromedp.Navigate(srvURL+pg[1]), chromedp.WaitVisible(chromedp.CSS("main h1")))
				// Both counters of the navigation at zero, as on a quiet
				// project's pages.
				eval[bool](t, ctx, `document.querySelectorAll(".top nav .badge").forEach(b => { b.textContent = "0"; b.classList.add("zero"); }) || true`)
				if low := eval[string](t, ctx, lowContrastText); low != "" {
					t.Errorf("%s: text below 4.5:1: %s", pg[1], low)
				}
			})
		}
	}
	step(t, ctx, emulateColorScheme("light"))
}

// testPhone: on a 400 px wide phone screen no page scrolls sideways: the
// navigation wraps, and a wide table scrolls inside its own box.
func testPhone(t *testing.T, ctx context.Context, srvURL string, pages [][2]string) {
	step(t, ctx, chromedp.EmulateViewport(400, 800, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	for _, pg := range pages {
		t.Run(pg[0], func(t *testing.T) {
			step(t, ctx, chromedp.Navigate(srvURL+pg[1]), chromedp.WaitVisible(chromedp.CSS("main h1")))
			// A phone widens its layout viewport to a page wider than the
			// screen (and then scales it down): both say "too wide".
			if w := eval[int](t, ctx, `Math.max(window.innerWidth, document.documentElement.scrollWidth, document.body.scrollWidth)`); w > 400 {
				wide := eval[string](t, ctx, `[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > 401).slice(0, 5).map(e => e.tagName + "." + e.className).join(", ")`)
				t.Errorf("%s: the page is %d px wide on a 400 px screen (wider: %s)", pg[1], w, wide)
			}
			// Every navigation entry is on the screen.
			if off := eval[int](t, ctx, `[...document.querySelectorAll(".top nav a, .who button")].filter(a => a.getBoundingClientRect().right > 400).length`); off != 0 {
				t.Errorf("%d navigation entries off the screen", off)
			}
		})
	}
	t.Run("TableScrollsInItsBox", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(srvURL+"/p/demo/leases"), chromedp.WaitVisible(chromedp.CSS("table")))
		overflow := eval[bool](t, ctx, `(() => { const t = document.querySelector("main table"); return t.scrollWidth > t.clientWidth && getComputedStyle(t).overflowX === "auto"; })()`)
		if !overflow {
			t.Errorf("the history table does not scroll inside its own box")
		}
	})
	if os.Getenv("WORKGRAPH_SCREENSHOTS") != "" {
		step(t, ctx, chromedp.Navigate(srvURL+"/p/demo/inbox"), chromedp.WaitVisible(chromedp.CSS("article.request")))
		saveShot(t, ctx, "phone-inbox.png")
	}
}

// testDark: the pages follow prefers-color-scheme: a dark scheme gives a
// dark page with light text (at least 4.5:1), and a graph and a timeline
// drawn in dark colours; a light one keeps the light page.
func testDark(t *testing.T, ctx context.Context, srvURL string, pages [][2]string) {
	// luminance is the relative luminance (WCAG) of a computed colour.
	const luminance = `(c => { const v = c.match(/[\d.]+/g).slice(0, 3).map(x => { x = x / 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); }); return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; })`
	lum := func(expr string) float64 {
		t.Helper()
		return eval[float64](t, ctx, luminance+"("+expr+")")
	}
	contrast := func(a, b float64) float64 {
		if a < b {
			a, b = b, a
		}
		return (a + 0.05) / (b + 0.05)
	}
	body := `getComputedStyle(document.body).backgroundColor`
	text := `getComputedStyle(document.body).color`

	t.Run("Light", func(t *testing.T) {
		step(t, ctx, emulateColorScheme("light"), chromedp.Navigate(srvURL+"/p/demo/inbox"), chromedp.WaitVisible(chromedp.CSS("main h1")))
		if l := lum(body); l < 0.8 {
			t.Errorf("light scheme: body background luminance %.2f, want a light page", l)
		}
	})
	step(t, ctx, emulateColorScheme("dark"))
	for _, pg := range pages {
		t.Run(pg[0], func(t *testing.T) {
			step(t, ctx, chromedp.Navigate(srvURL+pg[1]), chromedp.WaitVisible(chromedp.CSS("main h1")))
			if !eval[bool](t, ctx, `matchMedia("(prefers-color-scheme: dark)").matches`) {
				t.Fatal("the emulated dark scheme does not apply")
			}
			bg, fg := lum(body), lum(text)
			if bg > 0.05 {
				t.Errorf("body background %s (luminance %.3f), want dark", eval[string](t, ctx, body), bg)
			}
			if c := contrast(fg, bg); c < 4.5 {
				t.Errorf("text on the background: contrast %.1f:1, want at least 4.5:1", c)
			}
			// Cards, tables and the inbox's entries are dark too.
			if light := eval[int](t, ctx, luminance+`; [...document.querySelectorAll("main .card, main .table-card, main table, main article.request, main .column, main .graph-wrap")].filter(e => { const c = getComputedStyle(e).backgroundColor; return c !== "rgba(0, 0, 0, 0)" && `+luminance+`(c) > 0.1; }).length`); light != 0 {
				t.Errorf("%d light boxes on the dark page", light)
			}
		})
	}
	t.Run("GraphAndTimeline", func(t *testing.T) {
		step(t, ctx, chromedp.Navigate(srvURL+"/p/demo/graph"), chromedp.WaitVisible(chromedp.CSS("#graph svg g.node")))
		fill, label := lum(`getComputedStyle(document.querySelector("#graph g.node rect")).fill`), lum(`getComputedStyle(document.querySelector("#graph g.node text")).fill`)
		if fill > 0.1 {
			t.Errorf("graph node fill luminance %.2f, want dark", fill)
		}
		if c := contrast(label, fill); c < 4.5 {
			t.Errorf("graph label on its node: contrast %.1f:1, want at least 4.5:1", c)
		}
		if l := lum(`getComputedStyle(document.querySelector("#graph g.edge path")).stroke`); contrast(l, lum(`getComputedStyle(document.querySelector("#graph")).backgroundColor`)) < 3 {
			t.Errorf("graph arrows barely visible on the dark background")
		}
		id := pages[3][1]
		step(t, ctx, chromedp.Navigate(srvURL+id), chromedp.WaitVisible(chromedp.CSS(".timeline svg")))
		lane, worker := lum(`getComputedStyle(document.querySelector(".timeline .lane text")).fill`), lum(body)
		if c := contrast(lane, worker); c < 4.5 {
			t.Errorf("timeline labels: contrast %.1f:1 on the page, want at least 4.5:1", c)
		}
		if os.Getenv("WORKGRAPH_SCREENSHOTS") != "" {
			saveShot(t, ctx, "dark-item.png")
			step(t, ctx, chromedp.Navigate(srvURL+"/p/demo/inbox"), chromedp.WaitVisible(chromedp.CSS("article.request")))
			saveShot(t, ctx, "dark-inbox.png")
			step(t, ctx, chromedp.Navigate(srvURL+"/p/demo/graph"), chromedp.WaitVisible(chromedp.CSS("#graph svg")))
			saveShot(t, ctx, "dark-graph.png")
		}
	})
}

// saveShot writes a screenshot of the whole page to docs/img/name.
func saveShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100)) // quality 100: a PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "img", name), png, 0o644); err != nil {
		t.Fatal(fmt.Errorf("screenshot %s: %w", name, err))
	}
}
