package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/lease"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages holds one template set per page: the shared layout and partials
// (files starting with "_") plus the page's own file.
var pages = parsePages()

func parsePages() map[string]*template.Template {
	base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/_*.html"))
	files, err := fs.Glob(templateFS, "templates/[a-z]*.html")
	if err != nil {
		panic(err)
	}
	out := make(map[string]*template.Template, len(files))
	for _, f := range files {
		t := template.Must(template.Must(base.Clone()).ParseFS(templateFS, f))
		out[strings.TrimSuffix(path.Base(f), ".html")] = t
	}
	return out
}

// render executes the page template name with data into w. The page is
// rendered into a buffer first, so a template error never leaves half a
// page behind.
func render(w io.Writer, name string, data any) error {
	t, ok := pages[name]
	if !ok {
		return fmt.Errorf("web: no template %q", name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "page", data); err != nil {
		return fmt.Errorf("web: render %s: %w", name, err)
	}
	_, err := buf.WriteTo(w)
	return err
}

// assetVersion is a digest of the static files, appended to their URLs so
// browsers may cache them for long and still see every new release.
var assetVersion = func() string {
	h := sha256.New()
	_ = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		h.Write([]byte(p))
		h.Write(b)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

var funcs = template.FuncMap{
	"asset":        func(name string) string { return "/static/" + name + "?v=" + assetVersion },
	"markdown":     renderMarkdown,
	"short":        shortID,
	"ts":           formatTime,
	"tsp":          formatTimePtr,
	"rel":          relTime,
	"iso":          func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"dur":          formatDuration,
	"latency":      formatLatency,
	"withNow":      withNow,
	"typed":        clock.Typed,
	"json":         jsonBlock,
	"query":        query,
	"add":          func(a, b int) int { return a + b },
	"addf":         func(a, b float64) float64 { return a + b },
	"f1":           func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"until":        func(t, now time.Time) time.Duration { return t.Sub(now) },
	"since":        func(t, now time.Time) time.Duration { return now.Sub(t) },
	"oname":        outcomeName,
	"odd":          func(i int) bool { return i%2 == 1 },
	"join":         strings.Join,
	"title":        func(v any) string { return stateTitle(fmt.Sprint(v)) },
	"progress":     func(raw json.RawMessage) string { return progressText(raw, progressChars) },
	"progressFull": func(raw json.RawMessage) string { return progressText(raw, 0) },
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
}

// shortID is the first 8 hex digits of an id: enough to tell items apart on
// a page, and what people type.
func shortID(id uuid.UUID) string { return id.String()[:8] }

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func formatTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return formatTime(*t)
}

// withNow hands a shared template (hook-state) a value, V, and the page's
// Now, for its relative times.
func withNow(v any, now time.Time) map[string]any { return map[string]any{"V": v, "Now": now} }

// formatLatency says how long a request took, at the precision it is
// recorded (milliseconds): "47 ms", "2.35 s"; from a minute on as
// formatDuration does.
func formatLatency(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return strconv.FormatFloat(float64(d.Round(10*time.Millisecond))/float64(time.Second), 'f', -1, 64) + " s"
	default:
		return formatDuration(d)
	}
}

// formatDuration says how long something took or has waited, at the
// precision a person cares about: "42s", "7m 03s", "3h 12m", "4d 2h".
func formatDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		s = fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
	}
	if neg {
		return "-" + s
	}
	return s
}

// query builds a URL query string from key/value pairs, skipping empty
// values: {{query "state" .State "q" .Text}}.
func query(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// outcomeName is a lease's outcome, or "" while it is active.
func outcomeName(o *lease.Outcome) string {
	if o == nil {
		return ""
	}
	return string(*o)
}

// stateTitle is the display name of a state or outcome.
func stateTitle(s string) string {
	return strings.ReplaceAll(s, "_", " ")
}

// executeTemplate executes the template name of the page's set with data
// into w, without a buffer of its own (w is one).
func executeTemplate(w io.Writer, page, name string, data any) error {
	t, ok := pages[page]
	if !ok {
		return fmt.Errorf("web: no template %q", page)
	}
	if err := t.ExecuteTemplate(w, name, data); err != nil {
		return fmt.Errorf("web: render %s/%s: %w", page, name, err)
	}
	return nil
}

// renderPartial executes one named template of a page's set (a fragment
// that app.js swaps into the page).
func renderPartial(w io.Writer, page, name string, data any) error {
	t, ok := pages[page]
	if !ok {
		return fmt.Errorf("web: no template %q", page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("web: render %s/%s: %w", page, name, err)
	}
	_, err := buf.WriteTo(w)
	return err
}
