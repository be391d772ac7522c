package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"sort"
	"strings"
	"time"
)

// The chart is hand-written SVG: a grid of small panels, each a line chart
// over categories (agents, project sizes) or a grouped bar chart.

const (
	panelW, panelH = 470, 320
	padL, padR     = 64, 16
	padT, padB     = 40, 70
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

type series struct {
	name   string
	values []float64 // NaN: no point
}

// panel is one chart: lines over the categories x, or grouped bars (one
// group per category, one bar per series) when bars is set.
type panel struct {
	title, ylabel string
	x             []string
	series        []series
	bars          bool
	// logY draws the y axis in powers of ten (for series far apart).
	logY bool
}

func writeSVG(path string, rep *Report) error {
	panels := chartPanels(rep)
	cols := 2
	rows := (len(panels) + cols - 1) / cols
	if rows == 0 {
		rows = 1
	}
	var b strings.Builder
	w, h := cols*panelW, rows*panelH+50
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	sub := fmt.Sprintf("%s, %d CPUs, PostgreSQL %s (%s), %s measured after %s warm-up",
		rep.Platform, rep.CPUs, rep.Postgres["version"], rep.Postgres["source"],
		rep.Config.Duration.String(), rep.Config.Warmup.String())
	fmt.Fprintf(&b, `<text x="12" y="22" font-size="15" font-weight="bold">workgraph benchmarks, %s</text>`+"\n", esc(rep.StartedAt.Format("2006-01-02 15:04 UTC")))
	fmt.Fprintf(&b, `<text x="12" y="40" fill="#555">%s</text>`+"\n", esc(sub))
	for i, p := range panels {
		x0, y0 := (i%cols)*panelW, 50+(i/cols)*panelH
		p.draw(&b, x0, y0)
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// String formats the duration for people.
func (d Duration) String() string { return time.Duration(d).String() }

func esc(s string) string { return html.EscapeString(s) }

func (p panel) draw(b *strings.Builder, x0, y0 int) {
	plotW, plotH := panelW-padL-padR, panelH-padT-padB
	left, top := x0+padL, y0+padT
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", x0+12, y0+20, esc(p.title))
	max := 0.0
	for _, s := range p.series {
		for _, v := range s.values {
			if !math.IsNaN(v) && v > max {
				max = v
			}
		}
	}
	top1 := niceCeil(max)
	// y maps a value to its height fraction.
	y := func(v float64) float64 { return v / top1 }
	ticks := []float64{0, top1 / 5, 2 * top1 / 5, 3 * top1 / 5, 4 * top1 / 5, top1}
	if p.logY {
		minV := max
		for _, s := range p.series {
			for _, v := range s.values {
				if !math.IsNaN(v) && v > 0 && v < minV {
					minV = v
				}
			}
		}
		lo := math.Pow(10, math.Floor(math.Log10(math.Max(minV, 1e-3))))
		hi := math.Pow(10, math.Ceil(math.Log10(math.Max(max, lo*10))))
		y = func(v float64) float64 {
			if v <= lo {
				return 0
			}
			return math.Log10(v/lo) / math.Log10(hi/lo)
		}
		ticks = nil
		for t := lo; t <= hi*1.001; t *= 10 {
			ticks = append(ticks, t)
		}
	}
	// Axes and horizontal grid.
	for _, v := range ticks {
		yy := float64(top+plotH) - float64(plotH)*y(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, yy, left+plotW, yy)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n", left-6, yy+4, axisLabel(v))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top, left, top+plotH)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	fmt.Fprintf(b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle" fill="#444">%s</text>`+"\n",
		x0+14, top+plotH/2, esc(p.ylabel))
	n := len(p.x)
	if n == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#999">not measured</text>`+"\n", left+plotW/2, top+plotH/2)
		return
	}
	slot := float64(plotW) / float64(n)
	cx := func(i int) float64 { return float64(left) + slot*(float64(i)+0.5) }
	cy := func(v float64) float64 { return float64(top+plotH) - float64(plotH)*y(v) }
	for i, label := range p.x {
		for j, line := range strings.Split(label, "\n") {
			fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#444">%s</text>`+"\n", cx(i), top+plotH+15+12*j, esc(line))
		}
	}
	if p.bars {
		k := len(p.series)
		bw := slot * 0.8 / float64(max1(k))
		for si, s := range p.series {
			for i, v := range s.values {
				if math.IsNaN(v) {
					continue
				}
				x := cx(i) - slot*0.4 + bw*float64(si)
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`+"\n",
					x, cy(v), bw-1, float64(top+plotH)-cy(v), palette[si%len(palette)], esc(s.name), axisLabel(v))
			}
		}
	} else {
		for si, s := range p.series {
			color := palette[si%len(palette)]
			var pts []string
			for i, v := range s.values {
				if math.IsNaN(v) {
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", cx(i), cy(v)))
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s</title></circle>`+"\n", cx(i), cy(v), color, esc(s.name), axisLabel(v))
			}
			if len(pts) > 1 {
				fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
			}
		}
	}
	// Legend under the plot, two per line.
	for si, s := range p.series {
		lx := x0 + padL + (si%2)*(plotW/2)
		ly := top + plotH + 42 + (si/2)*14
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/>`+"\n", lx, ly-9, palette[si%len(palette)])
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", lx+14, ly, esc(s.name))
	}
}

func max1(k int) int {
	if k < 1 {
		return 1
	}
	return k
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func axisLabel(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(round(v/1e6, 2)) + "M"
	case v >= 1e4:
		return trimFloat(round(v/1e3, 1)) + "k"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return trimFloat(round(v, 2))
	}
}

// chartPanels picks the scaling curves out of the results.
func chartPanels(rep *Report) []panel {
	var ps []panel
	// Throughput against agents: workloads 1, 2 and 7.
	agents := map[int]bool{}
	for _, r := range rep.Results {
		if (r.Workload == 1 || r.Workload == 2) && r.Agents > 0 {
			agents[r.Agents] = true
		}
	}
	ax := sortedKeys(agents)
	tp := panel{title: "W1/W2 throughput vs agents (log scale)", ylabel: "items/s", logY: true}
	for _, a := range ax {
		tp.x = append(tp.x, fmt.Sprint(a))
	}
	tp.series = seriesBy(rep, func(r Result) (string, int, bool) {
		if r.Workload != 1 && r.Workload != 2 {
			return "", 0, false
		}
		return fmt.Sprintf("W%d %s", r.Workload, r.Name), indexOf(ax, r.Agents), true
	}, len(ax), func(r Result) float64 { return r.Rate })
	ps = append(ps, tp)

	// Workload 4: claim latency against project size.
	sizes := map[int]bool{}
	for _, r := range rep.Results {
		if r.Workload == 4 {
			sizes[int(r.Size)] = true
		}
	}
	sx := sortedKeys(sizes)
	gp := panel{title: "W4 claim latency vs items in project", ylabel: "ms"}
	for _, s := range sx {
		gp.x = append(gp.x, axisLabel(float64(s)))
	}
	for _, q := range []string{"p50", "p95", "p99"} {
		s := series{name: "claim " + q, values: nans(len(sx))}
		for _, r := range rep.Results {
			if r.Workload == 4 {
				s.values[indexOf(sx, int(r.Size))] = pick(r.Latency["claim"], q)
			}
		}
		gp.series = append(gp.series, s)
	}
	ps = append(ps, gp)

	// Workload 5: fan-out completion time.
	fp := panel{title: "W5 complete with N dependents", ylabel: "ms", bars: true}
	fs := series{name: "complete time (median)"}
	for _, r := range rep.Results {
		if r.Workload == 5 {
			fp.x = append(fp.x, fmt.Sprintf("%s deps\n%s items", axisLabel(float64(r.Size)), axisLabel(r.Extra["project_items"])))
			fs.values = append(fs.values, r.Latency["complete"].P50Ms)
		}
	}
	fp.series = []series{fs}
	ps = append(ps, fp)

	// Latency of the contended and heartbeat workloads.
	lp := panel{title: "W3 contended claim, W6 heartbeat latency", ylabel: "ms", bars: true}
	p50 := series{name: "p50", values: nil}
	p99 := series{name: "p99", values: nil}
	for _, r := range rep.Results {
		if r.Workload == 3 || r.Workload == 6 {
			lat := r.Latency[r.Primary]
			lp.x = append(lp.x, fmt.Sprintf("W%d %s", r.Workload, r.Name))
			p50.values = append(p50.values, lat.P50Ms)
			p99.values = append(p99.values, lat.P99Ms)
		}
	}
	lp.series = []series{p50, p99}
	ps = append(ps, lp)

	// Workload 7: server RSS against agents.
	mp := panel{title: "W7 server RSS under the REST lifecycle", ylabel: "MB", bars: true}
	idle := series{name: "before the load"}
	peak := series{name: "peak under load"}
	for _, r := range rep.Results {
		if r.Workload == 7 {
			mp.x = append(mp.x, fmt.Sprintf("%d agents", r.Agents))
			idle.values = append(idle.values, r.Extra["rss_idle_mb"])
			peak.values = append(peak.values, r.Extra["rss_peak_mb"])
		}
	}
	mp.series = []series{idle, peak}
	ps = append(ps, mp)
	return ps
}

func seriesBy(rep *Report, key func(Result) (string, int, bool), n int, val func(Result) float64) []series {
	var out []series
	idx := map[string]int{}
	for _, r := range rep.Results {
		name, i, ok := key(r)
		if !ok || i < 0 {
			continue
		}
		j, seen := idx[name]
		if !seen {
			j = len(out)
			idx[name] = j
			out = append(out, series{name: name, values: nans(n)})
		}
		out[j].values[i] = val(r)
	}
	return out
}

func nans(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

func pick(l Latency, q string) float64 {
	switch q {
	case "p50":
		return l.P50Ms
	case "p95":
		return l.P95Ms
	default:
		return l.P99Ms
	}
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func indexOf(v []int, x int) int {
	for i, y := range v {
		if y == x {
			return i
		}
	}
	return -1
}
