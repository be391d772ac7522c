package web_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestLayoutInBrowser checks layouts in headless Chromium: one browser and
// one server for its subtests, each in a project of its own (the machine
// runs every browser test at once; fewer browsers keep them in time).
func TestLayoutInBrowser(t *testing.T) {
	t.Parallel()
	ctx := startBrowser(t)
	srv := bootServer(t)
	_, admin, err := auth.NewService(srv.Pool(), nil).Create(context.Background(), nil, "layout-admin", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	step(t, ctx,
		signIn(srv, admin, "/signin"),
		// The sign-in page has a main too: wait until it is gone, or the
		// first subtest's navigation would cut the sign-in's redirect
		// short (net::ERR_ABORTED).
		chromedp.WaitNotPresent(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.CSS("main")),
	)
	project := func(t *testing.T, name string) graph.Project {
		p, err := graph.NewService(srv.Pool(), nil).CreateProject(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("Timeline", func(t *testing.T) { timelineLayout(t, ctx, srv, project(t, "tl")) })
	t.Run("GraphZoom", func(t *testing.T) { graphZoom(t, ctx, srv, project(t, "gz")) })
	t.Run("FormRows", func(t *testing.T) { formRows(t, ctx, srv, project(t, "fr")) })
	t.Run("LongWorker", func(t *testing.T) { longWorker(t, ctx, srv, project(t, "lw")) })
	t.Run("NarrowTimeline", func(t *testing.T) { narrowTimeline(t, ctx, srv, project(t, "nt")) })
	t.Run("WebhookForm", func(t *testing.T) { webhookForm(t, ctx, srv, project(t, "wf")) })
	t.Run("NarrowItemsList", func(t *testing.T) { narrowItemsList(t, ctx, srv, project(t, "nl")) })
	t.Run("NarrowEmptyTable", func(t *testing.T) { narrowEmptyTable(t, ctx, srv, project(t, "ne")) })
	t.Run("LongTitle", func(t *testing.T) { longTitle(t, ctx, srv, project(t, "lt")) })
}

// longTitle: an item whose title is one word of 500 letters (titles may
// be 500 characters) breaks inside its cell of the items list and the
// history, so the other columns (state, priority, worker) stay on a
// 1360 px screen without scrolling the table. The word set the title
// column's width, and every row's state went off the card's right edge.
func longTitle(t *testing.T, ctx context.Context, srv *server.Server, project graph.Project) {
	bg := context.Background()
	g := graph.NewService(srv.Pool(), nil)
	it, err := g.CreateItem(bg, project.ID, graph.NewItem{Title: strings.Repeat("Supercalifragilistic", 25), CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lease.NewService(srv.Pool(), nil, lease.Config{}).Claim(bg, project.ID, lease.ClaimRequest{Worker: "w-long"}); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"/items?view=list", "/leases"} {
		step(t, ctx, chromedp.Navigate(srv.URL()+"/p/"+project.Name+page), chromedp.WaitVisible(chromedp.CSS("tbody td:first-child a")))
		type look struct {
			TableRight, CardRight float64
			Scrolls               bool
		}
		got := eval[look](t, ctx, `(() => {
			const table = document.querySelector("tbody").closest("table");
			const box = table.parentElement;
			return {tableRight: table.getBoundingClientRect().right,
				cardRight: box.getBoundingClientRect().right,
				scrolls: box.scrollWidth > box.clientWidth};
		})()`)
		if got.Scrolls || got.TableRight > got.CardRight+1 {
			t.Errorf("%s: a title of one 500-letter word makes the table %.0f px wide past its card's %.0f (scrolls %v)", page, got.TableRight, got.CardRight, got.Scrolls)
		}
	}
	// The item's page: the title wraps and its buttons keep their labels
	// on one line ("Histor" over "y" and "Cancel" over "item" before).
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/"+project.Name+"/items/"+it.ID.String()), chromedp.WaitVisible(chromedp.CSS(".page-head h1")))
	broken := eval[[]string](t, ctx, `[...document.querySelectorAll(".page-head > .actions .button, .page-head > .actions button")]
		.filter(b => b.getBoundingClientRect().height > 40).map(b => b.textContent.trim())`)
	if len(broken) > 0 {
		t.Errorf("beside a long title, the buttons %q break their labels over lines", broken)
	}
}

// narrowTimeline: on a phone's width (390 px) the lease timeline keeps
// its labels readable (at least 10 px) and scrolls sideways inside its
// card; the page itself does not scroll sideways. Drawn to the card's
// width, its 12 px labels shrank to 4 px.
func narrowTimeline(t *testing.T, ctx context.Context, srv *server.Server, project graph.Project) {
	bg := context.Background()
	g, l := graph.NewService(srv.Pool(), nil), lease.NewService(srv.Pool(), nil, lease.Config{})
	it, err := g.CreateItem(bg, project.ID, graph.NewItem{Title: "on a phone", CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim(bg, project.ID, lease.ClaimRequest{Worker: "phone-1"}); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, chromedp.EmulateViewport(390, 844))
	t.Cleanup(func() { step(t, ctx, chromedp.EmulateViewport(1360, 900)) })
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/"+project.Name+"/items/"+it.ID.String()), chromedp.WaitVisible(chromedp.CSS(".timeline svg")))
	type look struct {
		Font                 float64
		Scrolls, PageScrolls bool
		BoxRight, CardRight  float64
	}
	got := eval[look](t, ctx, `(() => {
		const box = document.querySelector(".timeline"), svg = box.querySelector("svg");
		const label = svg.querySelector("g.lane text.worker");
		const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
		return {
			font: parseFloat(getComputedStyle(label).fontSize) * scale,
			scrolls: box.scrollWidth > box.clientWidth && getComputedStyle(box).overflowX === "auto",
			pageScrolls: document.documentElement.scrollWidth > window.innerWidth,
			boxRight: box.getBoundingClientRect().right,
			cardRight: box.closest("section.card").getBoundingClientRect().right,
		};
	})()`)
	if got.Font < 10 {
		t.Errorf("the timeline's labels are drawn at %.1f px on a 390 px screen, want at least 10", got.Font)
	}
	if !got.Scrolls {
		t.Errorf("the timeline does not scroll sideways inside its box")
	}
	if got.PageScrolls || got.BoxRight > got.CardRight+1 {
		t.Errorf("the page scrolls sideways (%v) or the timeline runs past its card (%.0f > %.0f)", got.PageScrolls, got.BoxRight, got.CardRight)
	}
}

// longWorker: a worker's name of 152 characters (names may have 200)
// keeps the item page in shape: in the timeline its label ends before the
// bars, and the lease table scrolls inside its card instead of running
// over the page's right column.
func longWorker(t *testing.T, ctx context.Context, srv *server.Server, project graph.Project) {
	bg := context.Background()
	g, l := graph.NewService(srv.Pool(), nil), lease.NewService(srv.Pool(), nil, lease.Config{})
	it, err := g.CreateItem(bg, project.ID, graph.NewItem{Title: "long worker", CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Claim(bg, project.ID, lease.ClaimRequest{Worker: strings.Repeat("verylongworkername-", 8)}); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/"+project.Name+"/items/"+it.ID.String()), chromedp.WaitVisible(chromedp.CSS(".timeline svg")))
	type fit struct{ LabelRight, PlotLeft float64 }
	got := eval[fit](t, ctx, `(() => {
		const svg = document.querySelector(".timeline svg"), s = svg.getBoundingClientRect();
		const label = svg.querySelector("g.lane text.worker").getBoundingClientRect(), bar = svg.querySelector("g.lane rect.bar").getBoundingClientRect();
		return {labelRight: label.right - s.left, plotLeft: bar.left - s.left};
	})()`)
	if got.LabelRight > got.PlotLeft {
		t.Errorf("the worker's label ends at %.0f px, past the bar starting at %.0f px", got.LabelRight, got.PlotLeft)
	}
	// The label reads as the cut name alone; the whole name is its
	// tooltip (a title beside it, not inside the text).
	if label := eval[string](t, ctx, `document.querySelector(".timeline g.lane text.worker").textContent`); label != "verylongworkern…" {
		t.Errorf("the label reads %q", label)
	}
	overflow := eval[bool](t, ctx, `(() => {
		const table = [...document.querySelectorAll("section.card table")].find(t => t.textContent.includes("verylongworkername"));
		const box = table.parentElement, card = table.closest("section.card");
		return box.getBoundingClientRect().right > card.getBoundingClientRect().right + 1 || getComputedStyle(box).overflowX !== "auto";
	})()`)
	if overflow {
		t.Errorf("the lease table runs past its card instead of scrolling inside it")
	}
}

// formRows: the new item form's rows of fields (priority and labels,
// then parent and dependencies) keep a gap between them: the second
// row's labels sat on the first row's inputs.
func formRows(t *testing.T, ctx context.Context, srv *server.Server, project graph.Project) {
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/"+project.Name+"/items/new"), chromedp.WaitVisible(chromedp.ID("parent")))
	gap := eval[float64](t, ctx, `document.querySelector("label[for=parent]").getBoundingClientRect().top
		- document.getElementById("priority").getBoundingClientRect().bottom`)
	if gap < 8 {
		t.Errorf("the form's second row starts %.1f px below the first row's inputs, want a gap of at least 8 px", gap)
	}
}

// timelineLayout: in Chromium, a lease of milliseconds keeps a visible
// bar, and its "1 refused" label sits next to its marker, not at the right
// edge of the timeline.
func timelineLayout(t *testing.T, ctx context.Context, srv *server.Server, project graph.Project) {
	bg := context.Background()
	// The leases run on a stub clock set two hours back: a lease of 5 ms
	// in a history of an hour and a half, its late report half an hour
	// after it, a second lease that ended ten minutes ago.
	var dbNow time.Time
	if err := srv.Pool().QueryRow(bg, `SELECT now()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewStub(dbNow.Add(-2 * time.Hour))
	g, l := graph.NewService(srv.Pool(), clk), lease.NewService(srv.Pool(), clk, lease.Config{})
	it, err := g.CreateItem(bg, project.ID, graph.NewItem{Title: "quick one", CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.Claim(bg, project.ID, lease.ClaimRequest{Worker: "claude-1"})
	if err != nil {
		t.Fatal(err)
	}
	f := lease.Fence{LeaseID: first.Lease.ID, Epoch: first.Lease.Epoch}
	clk.Advance(5 * time.Millisecond)
	if _, err := l.Release(bg, project.ID, f, "too quick"); err != nil {
		t.Fatal(err)
	}
	// A late heartbeat on the ended lease is refused and marked.
	clk.Advance(30 * time.Minute)
	if _, err := l.Heartbeat(bg, project.ID, f, lease.Heartbeat{}); !errors.Is(err, wgerr.LeaseLost) {
		t.Fatalf("late heartbeat: %v", err)
	}
	clk.Advance(30 * time.Minute)
	second, err := l.Claim(bg, project.ID, lease.ClaimRequest{Worker: "codex-2", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Its progress note takes the table's last column, as an agent's
	// notes do: the other columns are left little room.
	clk.Advance(time.Minute)
	f2 := lease.Fence{LeaseID: second.Lease.ID, Epoch: second.Lease.Epoch}
	if _, err := l.Heartbeat(bg, project.ID, f2, lease.Heartbeat{
		Progress: []byte(`{"note":"patched the enum, rebuilding the reference pages of the public API"}`),
	}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(49 * time.Minute)
	if _, err := l.Complete(bg, project.ID, f2, []byte(`{"ok":true}`), nil); err != nil {
		t.Fatal(err)
	}

	step(t, ctx,
		chromedp.Navigate(srv.URL()+"/p/tl/items/"+it.ID.String()),
		chromedp.WaitVisible(chromedp.CSS(".timeline svg")),
	)
	type box struct{ Left, Right, Width, Scale float64 }
	measure := func(sel string) box {
		return eval[box](t, ctx, fmt.Sprintf(`(() => {
			const svg = document.querySelector(".timeline svg"), el = document.querySelector(%q);
			const s = svg.getBoundingClientRect(), r = el.getBoundingClientRect();
			return {left: r.left - s.left, right: r.right - s.left, width: r.width, scale: s.width / svg.viewBox.baseVal.width};
		})()`, sel))
	}
	bar := measure(`.timeline g.lane[data-epoch="1"] rect.bar`)
	if bar.Width < 8*bar.Scale-0.5 {
		t.Errorf("the short lease's bar is %.1f px wide, want at least %.1f", bar.Width, 8*bar.Scale)
	}
	mark := measure(`.timeline g.lane[data-epoch="1"] path[data-mark="stale"]`)
	label := measure(`.timeline g.lane[data-epoch="1"] text.stale`)
	if label.Left < mark.Right-1 || label.Left > mark.Right+20*label.Scale {
		t.Errorf("the refused label spans %.0f..%.0f px, its marker ends at %.0f px: want the label just right of it", label.Left, label.Right, mark.Right)
	}
	if width := eval[float64](t, ctx, `document.querySelector(".timeline svg").getBoundingClientRect().width`); label.Right > width {
		t.Errorf("the label ends at %.0f px, outside the %.0f px picture", label.Right, width)
	}
	if got := eval[string](t, ctx, `document.querySelector('.timeline g.lane[data-epoch="1"] text.stale').textContent`); got != "1 refused" {
		t.Errorf("label = %q", got)
	}

	// The lease table's figures (heartbeats, tokens, cost) and its
	// "1 refused" mark stay on one line in a narrow window: the page lets
	// long words break anywhere (main's overflow-wrap), and "$0.0000" was
	// cut into "$0.0" and "000" (and, on the demo's item page at 1360 px,
	// the mark into "1" and "refused").
	step(t, ctx, chromedp.EmulateViewport(900, 900), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".timeline svg")))
	defer step(t, ctx, chromedp.EmulateViewport(1360, 900)) // the size startBrowser sets
	broken := eval[[]string](t, ctx, linesJS+`[...document.querySelectorAll("td.num, td .label")].filter(td => lines(td) > 1).map(td => td.textContent)`)
	if len(broken) > 0 {
		t.Errorf("figures or marks of the lease table break across lines at 900 px: %q", broken)
	}
	// Worker names stay whole in the tables that list them (the history,
	// the workers page): "claude-1" came out as "claude-" over "1" at
	// 1360 px, "codex" over "-2" in the outcomes by worker.
	for _, page := range []string{"/p/tl/leases", "/p/tl/workers", "/p/tl/items/" + it.ID.String()} {
		step(t, ctx, chromedp.Navigate(srv.URL()+page), chromedp.WaitVisible(chromedp.CSS("table")))
		broken := eval[[]string](t, ctx, linesJS+`[...document.querySelectorAll("table")].flatMap(table => {
			const col = [...table.querySelectorAll("thead th")].findIndex(th => th.textContent.trim() === "Worker");
			return col < 0 ? [] : [...table.querySelectorAll("tbody tr")].map(tr => tr.children[col]).filter(td => td);
		}).filter(td => lines(td) > 1).map(td => td.textContent)`)
		if len(broken) > 0 {
			t.Errorf("%s: worker names break across lines at 900 px: %q", page, broken)
		}
	}
}

// linesJS defines lines(el): on how many lines the text of el is laid
// out (the distinct tops of its text's boxes).
const linesJS = `const lines = el => {
	const tops = new Set(), walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
	for (let n = walk.nextNode(); n; n = walk.nextNode()) {
		if (!n.textContent.trim()) continue;
		const r = document.createRange();
		r.selectNodeContents(n);
		for (const b of r.getClientRects()) tops.add(Math.round(b.top));
	}
	return tops.size;
};
`

// graphZoom: in Chromium, the graph page zooms with its buttons, the
// wheel and the keyboard, pans by dragging without opening the item under
// the pointer, and a plain click still opens an item.
func graphZoom(t *testing.T, ctx context.Context, srv *server.Server, project graph.Project) {
	bg := context.Background()
	g := graph.NewService(srv.Pool(), nil)
	var prev []graph.Item
	for i := range 30 {
		in := graph.NewItem{Title: fmt.Sprintf("step %02d", i), CreatedBy: "test"}
		if i >= 3 {
			in.DependsOn = append(in.DependsOn, prev[i-3].ID) // three parallel chains of ten
		}
		it, err := g.CreateItem(bg, project.ID, in)
		if err != nil {
			t.Fatal(err)
		}
		prev = append(prev, it)
	}
	step(t, ctx,
		chromedp.Navigate(srv.URL()+"/p/gz/graph"),
		chromedp.WaitVisible(chromedp.CSS("#graph-tools")),
		chromedp.WaitVisible(chromedp.CSS("#graph.zoomable svg")),
	)
	type view struct {
		X, Y, W, H float64
		Zoom       string
	}
	read := func() view {
		return eval[view](t, ctx, `(() => {
			const b = document.querySelector("#graph svg").viewBox.baseVal;
			return {x: b.x, y: b.y, w: b.width, h: b.height, zoom: document.getElementById("graph").dataset.zoom};
		})()`)
	}
	whole := read()
	if whole.Zoom != "100" || whole.W <= 0 {
		t.Fatalf("initial view %+v, want the whole graph at 100%%", whole)
	}

	t.Run("Buttons", func(t *testing.T) {
		step(t, ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="in"]`)))
		if v := read(); v.W >= whole.W || v.Zoom != "125" {
			t.Errorf("after +: %+v, want 125%% of %+v", v, whole)
		}
		step(t, ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="out"]`)), chromedp.Click(chromedp.CSS(`button[data-zoom="out"]`)))
		if v := read(); v.W <= whole.W || v.Zoom != "80" {
			t.Errorf("after + - -: %+v, want 80%%", v)
		}
		step(t, ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="fit"]`)))
		if v := read(); v != whole {
			t.Errorf("after Fit: %+v, want %+v", v, whole)
		}
	})
	t.Run("Wheel", func(t *testing.T) {
		eval[bool](t, ctx, `(() => {
			const w = document.getElementById("graph"), r = w.getBoundingClientRect();
			return w.dispatchEvent(new WheelEvent("wheel", {deltaY: -300, clientX: r.left + 40, clientY: r.top + 40, bubbles: true, cancelable: true}));
		})()`)
		v := read()
		if v.W >= whole.W {
			t.Errorf("after a wheel up: %+v, want zoomed in", v)
		}
		// Zoomed at the pointer near the top left: the view's origin moves
		// towards it, less than towards the centre.
		if v.X < whole.X || v.X > whole.X+(whole.W-v.W)/2 {
			t.Errorf("the wheel zoomed around the wrong point: %+v from %+v", v, whole)
		}
		step(t, ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="fit"]`)))
	})
	t.Run("Keyboard", func(t *testing.T) {
		eval[bool](t, ctx, `(document.getElementById("graph").focus(), document.activeElement.id === "graph")`)
		step(t, ctx, chromedp.KeyEvent("+"))
		zoomed := read()
		if zoomed.Zoom != "125" {
			t.Fatalf("after the + key: %+v", zoomed)
		}
		step(t, ctx, chromedp.KeyEvent(kb.ArrowRight))
		if v := read(); v.X <= zoomed.X {
			t.Errorf("after the right arrow: %+v, want the view moved right of %+v", v, zoomed)
		}
		step(t, ctx, chromedp.KeyEvent("0"))
		if v := read(); v != whole {
			t.Errorf("after the 0 key: %+v, want %+v", v, whole)
		}
	})
	// node returns the centre of an item's node on the screen.
	node := func(id string) (float64, float64) {
		p := eval[[]float64](t, ctx, fmt.Sprintf(`(() => {
			const r = document.getElementById("n-%s").getBoundingClientRect();
			return [r.left + r.width / 2, r.top + r.height / 2];
		})()`, id))
		return p[0], p[1]
	}
	t.Run("DragPansWithoutOpening", func(t *testing.T) {
		step(t, ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="in"]`)))
		before := read()
		// A node in the middle, in view after zooming in at the centre.
		x, y := node(prev[15].ID.String())
		step(t, ctx,
			chromedp.MouseEvent(chromedp.MousePressed, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
			chromedp.MouseEvent(chromedp.MouseMoved, x+30, y+10, chromedp.ButtonLeft),
			chromedp.MouseEvent(chromedp.MouseMoved, x+80, y+20, chromedp.ButtonLeft),
			chromedp.MouseEvent(chromedp.MouseReleased, x+80, y+20, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		)
		after := read()
		if after.X >= before.X || after.Y >= before.Y || after.W != before.W {
			t.Errorf("after dragging right and down: %+v, want the view moved left and up of %+v", after, before)
		}
		if path := eval[string](t, ctx, `location.pathname`); path != "/p/gz/graph" {
			t.Fatalf("the drag opened %s", path)
		}
	})
	t.Run("ClickOpensItem", func(t *testing.T) {
		step(t, ctx, chromedp.Click(chromedp.CSS(`button[data-zoom="fit"]`)))
		x, y := node(prev[16].ID.String())
		step(t, ctx, chromedp.MouseClickXY(x, y), chromedp.WaitVisible(chromedp.CSS("h1")))
		if path := eval[string](t, ctx, `location.pathname`); !strings.HasSuffix(path, "/items/"+prev[16].ID.String()) {
			t.Errorf("a click on a node opened %s", path)
		}
	})
}

// webhookForm: the add form's rows keep a gap (the description's label
// sat on the row above), and its URL field spans the form.
func webhookForm(t *testing.T, ctx context.Context, srv *server.Server, project graph.Project) {
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/"+project.Name+"/webhooks"), chromedp.WaitVisible(chromedp.ID("hook-url")))
	type look struct{ Gap, URLWidth, DescWidth float64 }
	got := eval[look](t, ctx, `(() => ({
		gap: document.querySelector("label[for=hook-description]").getBoundingClientRect().top
			- document.getElementById("hook-format").getBoundingClientRect().bottom,
		urlWidth: document.getElementById("hook-url").getBoundingClientRect().width,
		descWidth: document.getElementById("hook-description").getBoundingClientRect().width,
	}))()`)
	if got.Gap < 8 {
		t.Errorf("the description's label starts %.1f px below the format field, want a gap of at least 8 px", got.Gap)
	}
	if got.URLWidth < got.DescWidth-1 {
		t.Errorf("the URL field is %.0f px wide, the description %.0f px: want the URL as wide", got.URLWidth, got.DescWidth)
	}
}

// narrowItemsList: on a phone's width the items list keeps its titles
// readable: the title column keeps at least 12em and breaks no word in the
// middle (the table scrolls sideways in its card); it had shrunk to a few
// letters a line.
func narrowItemsList(t *testing.T, ctx context.Context, srv *server.Server, project graph.Project) {
	g := graph.NewService(srv.Pool(), nil)
	for range 3 {
		if _, err := g.CreateItem(context.Background(), project.ID, graph.NewItem{
			Title: "Step 29 of the migration to the new billing system", CreatedBy: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	step(t, ctx, chromedp.EmulateViewport(390, 844))
	t.Cleanup(func() { step(t, ctx, chromedp.EmulateViewport(1360, 900)) })
	for _, page := range []string{"/items?view=list", "/leases"} {
		if page == "/leases" {
			if _, err := lease.NewService(srv.Pool(), nil, lease.Config{}).Claim(context.Background(), project.ID, lease.ClaimRequest{Worker: "phone"}); err != nil {
				t.Fatal(err)
			}
		}
		step(t, ctx, chromedp.Navigate(srv.URL()+"/p/"+project.Name+page), chromedp.WaitVisible(chromedp.CSS("tbody td:first-child a")))
		type look struct {
			Width, Font float64
			Lines       int
			PageScrolls bool
		}
		got := eval[look](t, ctx, `(() => {
			const a = document.querySelector("tbody td:first-child a"), cell = a.closest("td");
			const font = parseFloat(getComputedStyle(a).fontSize);
			const lines = a.getClientRects().length;
			return {width: cell.getBoundingClientRect().width, font: font, lines: lines,
				pageScrolls: document.documentElement.scrollWidth > window.innerWidth};
		})()`)
		if got.Width < 12*got.Font {
			t.Errorf("%s: the title column is %.0f px wide on a 390 px screen, want at least 12em (%.0f px)", page, got.Width, 12*got.Font)
		}
		if got.Lines > 4 {
			t.Errorf("%s: a 51-character title takes %d lines", page, got.Lines)
		}
		if got.PageScrolls {
			t.Errorf("%s: the page scrolls sideways; the table should scroll inside its card", page)
		}
	}
}

// narrowEmptyTable: on a phone the note of an empty table (the workers
// page with no live lease) shows on screen; centred in a table wider than
// the screen, it was cut after two words.
func narrowEmptyTable(t *testing.T, ctx context.Context, srv *server.Server, project graph.Project) {
	step(t, ctx, chromedp.EmulateViewport(390, 844))
	t.Cleanup(func() { step(t, ctx, chromedp.EmulateViewport(1360, 900)) })
	step(t, ctx, chromedp.Navigate(srv.URL()+"/p/"+project.Name+"/workers"), chromedp.WaitVisible(chromedp.CSS("td.empty")))
	right := eval[float64](t, ctx, `(() => {
		const cell = document.querySelector("td.empty"), r = document.createRange();
		r.selectNodeContents(cell);
		return r.getBoundingClientRect().right;
	})()`)
	if right > 390 {
		t.Errorf("the empty table's note ends at %.0f px, past the 390 px screen", right)
	}
}
