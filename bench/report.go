package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// Result is one measured run of a workload.
type Result struct {
	Workload int    `json:"workload"`
	Name     string `json:"name"`
	Agents   int    `json:"agents,omitempty"`
	// Size is the workload's scale parameter: items in the project
	// (workload 4), dependents (5), live leases (6), plan items (8).
	Size    int64   `json:"size,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	Ops     int64   `json:"ops,omitempty"`
	Rate    float64 `json:"rate,omitempty"`
	Unit    string  `json:"unit,omitempty"`
	// Primary names the latency shown in the table.
	Primary string             `json:"primary,omitempty"`
	Latency map[string]Latency `json:"latency,omitempty"`
	Extra   map[string]float64 `json:"extra,omitempty"`
	Errors  map[string]int64   `json:"errors,omitempty"`
	Note    string             `json:"note,omitempty"`
}

// Target is one of the targets and whether this run met it.
type Target struct {
	Workload int    `json:"workload"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	// Met is nil when the run did not measure it.
	Met *bool `json:"met"`
}

// Report is everything a run writes to latest.json.
type Report struct {
	StartedAt  time.Time         `json:"started_at"`
	FinishedAt time.Time         `json:"finished_at"`
	Command    string            `json:"command"`
	GoVersion  string            `json:"go_version"`
	Platform   string            `json:"platform"`
	CPUs       int               `json:"cpus"`
	Postgres   map[string]string `json:"postgres"`
	// LoadAvg is /proc/loadavg at the start and at the end: the machine is
	// shared, and its load explains much of the noise.
	LoadAvg []string `json:"load_avg,omitempty"`
	Config  Config   `json:"config"`
	Results []Result `json:"results"`
	Targets []Target `json:"targets"`
	Skipped []string `json:"skipped,omitempty"`
	// Statements are PostgreSQL's account of each workload (-statements).
	Statements []WorkloadStatements `json:"statements,omitempty"`
}

// fromRecorder turns a loop's record into a Result.
func fromRecorder(workload int, name string, agents int, rec *recorder, unit, primary string) Result {
	secs := rec.seconds
	r := Result{
		Workload: workload, Name: name, Agents: agents,
		Seconds: round(secs, 3), Ops: rec.ops, Unit: unit, Primary: primary,
		Latency: map[string]Latency{}, Extra: map[string]float64{},
	}
	if secs > 0 {
		r.Rate = round(float64(rec.ops)/secs, 1)
	}
	for k, h := range rec.lat {
		r.Latency[k] = h.summary()
	}
	for k, v := range rec.extra {
		r.Extra[k] = v
	}
	if len(rec.errs) > 0 {
		r.Errors = rec.errs
	}
	return r
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// errorKind names an error for the error counts of a result.
func errorKind(err error) string {
	var he *httpError
	switch {
	case errors.Is(err, errEmpty):
		return "empty"
	case errors.As(err, &he):
		if he.Code != "" {
			return fmt.Sprintf("http_%d_%s", he.Status, he.Code)
		}
		return fmt.Sprintf("http_%d", he.Status)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "timeout"
	}
	var we *wgerr.Error
	if errors.As(err, &we) {
		return string(we.Code)
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return "other: " + s
}

// printTable writes the results as an aligned table.
func printTable(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "W\trun\tagents\tsize\tthroughput\tunit\tp50 ms\tp95 ms\tp99 ms\tnotes\t")
	for _, r := range rep.Results {
		lat := r.Latency[r.Primary]
		rate := ""
		if r.Rate > 0 {
			rate = fmt.Sprintf("%.1f", r.Rate)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Workload, r.Name, blank(int64(r.Agents)), blank(r.Size), rate, r.Unit,
			fmtMs(lat.P50Ms, lat.Count), fmtMs(lat.P95Ms, lat.Count), fmtMs(lat.P99Ms, lat.Count), notes(r))
	}
	tw.Flush()
	if len(rep.Targets) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Targets (issues 7 and 15):")
		for _, t := range rep.Targets {
			verdict := "not measured"
			if t.Met != nil && *t.Met {
				verdict = "MET"
			} else if t.Met != nil {
				verdict = "NOT MET"
			}
			fmt.Fprintf(w, "  W%d %-62s %-12s %s\n", t.Workload, t.Target, verdict, t.Measured)
		}
	}
	for _, s := range rep.Skipped {
		fmt.Fprintln(w, "skipped:", s)
	}
}

func blank(v int64) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprint(v)
}

func fmtMs(v float64, n uint64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", v)
}

func notes(r Result) string {
	var parts []string
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%s", k, trimFloat(r.Extra[k])))
	}
	if len(r.Errors) > 0 {
		ek := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			ek = append(ek, k)
		}
		sort.Strings(ek)
		for _, k := range ek {
			parts = append(parts, fmt.Sprintf("err[%s]=%d", k, r.Errors[k]))
		}
	}
	if r.Note != "" {
		parts = append(parts, r.Note)
	}
	return strings.Join(parts, " ")
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3g", v)
}

// writeJSON writes the report to path, creating its directory.
func writeJSON(path string, rep *Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// writeMarkdown writes the results and targets as Markdown tables (the
// figures docs/benchmarks.md quotes).
func writeMarkdown(path string, rep *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Run of %s: `%s` on %s, %d CPUs, Go %s, PostgreSQL %s (%s; fsync=%s, synchronous_commit=%s, shared_buffers=%s), pool %d connections, %s measured after %s warm-up.\n\n",
		rep.StartedAt.Format("2006-01-02 15:04 UTC"), rep.Command, rep.Platform, rep.CPUs, rep.GoVersion,
		rep.Postgres["version"], rep.Postgres["source"], rep.Postgres["fsync"], rep.Postgres["synchronous_commit"],
		rep.Postgres["shared_buffers"], rep.Config.Pool, rep.Config.Duration.String(), rep.Config.Warmup.String())
	if len(rep.LoadAvg) > 0 {
		fmt.Fprintf(&b, "Load average (1, 5, 15 min) at the start: %s; at the end: %s.\n\n", rep.LoadAvg[0], rep.LoadAvg[len(rep.LoadAvg)-1])
	}
	b.WriteString("| W | run | agents | size | throughput | unit | p50 ms | p95 ms | p99 ms | notes |\n")
	b.WriteString("|---|---|--:|--:|--:|---|--:|--:|--:|---|\n")
	for _, r := range rep.Results {
		lat := r.Latency[r.Primary]
		rate := ""
		if r.Rate > 0 {
			rate = fmt.Sprintf("%.1f", r.Rate)
		}
		primary := ""
		if r.Primary != "" {
			primary = " (" + r.Primary + ")"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Workload, r.Name+primary, blank(int64(r.Agents)), blank(r.Size), rate, r.Unit,
			fmtMs(lat.P50Ms, lat.Count), fmtMs(lat.P95Ms, lat.Count), fmtMs(lat.P99Ms, lat.Count),
			strings.ReplaceAll(notes(r), "|", "/"))
	}
	if len(rep.Targets) > 0 {
		b.WriteString("\n| W | target | met | measured |\n|---|---|---|---|\n")
		for _, t := range rep.Targets {
			met := "not measured"
			if t.Met != nil && *t.Met {
				met = "yes"
			} else if t.Met != nil {
				met = "**no**"
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", t.Workload, t.Target, met, t.Measured)
		}
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(&b, "\nSkipped: %s\n", s)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// loadAvg returns the first three fields of /proc/loadavg, or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
