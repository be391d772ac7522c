package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/graph"
)

func init() { extraCommands = append(extraCommands, newImportCmd, newPlanCmd) }

// newPlanCmd is "workgraph plan import", the same command as "workgraph
// import" under the name the docs and the API give it (a plan import).
func newPlanCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Import a plan of items and dependencies (plan import is the same as import)",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(newImportCmd(stdio))
	return cmd
}

func newImportCmd(stdio IO) *cobra.Command {
	var (
		f             clientFlags
		dryRun, local bool
	)
	cmd := &cobra.Command{
		Use:   "import FILE|-",
		Short: "Create a plan of items and dependencies in one transaction",
		Long: `Create every item of a plan file, with its dependencies and children, in
one transaction: all of it or nothing.

The plan is YAML or JSON. Each item has a key local to the file; depends_on
names other keys, or existing items by id (or its first characters, as
tables show them); children are created under their item:

  items:
    - key: schema
      title: Write the migration
      body: |
        Add the table and its index.
      priority: 5
      labels: [db]
    - key: api
      title: Add the endpoint
      depends_on: [schema]
      children:
        - key: api-tests
          title: Tests for the endpoint

The file is checked before anything is sent: unknown fields, fields written
twice, missing titles, duplicate keys, unknown keys, characters the server
refuses (a tab in a title, an invisible format character) and dependency cycles
are reported with their line numbers. --dry-run shows what would be created and lets the server
check the plan without storing anything (--local: check only here).

Keys make a re-import safe: an item whose key already exists in the project
is left alone (not updated, not duplicated), and only the items that are new
are created, below existing parents where the plan puts them. Importing the
same file twice creates nothing the second time. --dry-run says, for every
item, whether it would be created or exists (and in which fields it differs
from the file); to change an existing item, use "workgraph items edit".`,
		Args: args(cobra.ExactArgs(1)),
		RunE: runClient(stdio, &f, func(ctx context.Context, s *session, a []string) error {
			prog := newProgress(stdio.Err)
			prog.status("reading %s", a[0])
			name, data, err := readInput(stdio.In, a[0])
			if err != nil {
				prog.done()
				return usageError("%v", err)
			}
			prog.status("checking %s (%s)", name, byteSize(int64(len(data))))
			p, err := parsePlan(name, data, planOptions{})
			prog.done()
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			req := p.request(dryRun)
			if err := checkPlanSize(p, req); err != nil {
				return err
			}
			if err := s.resolvePlanPrefixes(ctx, p, local); err != nil {
				return err
			}
			if dryRun && local {
				return printPlan(s, p, nil)
			}
			res, err := s.api.ImportPlan(ctx, s.cfg.Project, req, prog.upload(len(p.All)))
			prog.done()
			if err != nil {
				return annotatePlanError(err, p)
			}
			if dryRun {
				return printPlan(s, p, res)
			}
			if s.json {
				return printJSON(s.Out, res)
			}
			items, deps := p.newCounts(res)
			fmt.Fprintf(s.Out, "created %s in project %q", planCounts(items, deps), s.cfg.Project)
			if n := len(res.Existing); n > 0 {
				fmt.Fprintf(s.Out, "; %s (same key) and %s left alone", count(n, "already existed", "already existed"), wasWere(n))
			}
			fmt.Fprintln(s.Out)
			t := newTable(s.Out)
			fmt.Fprintln(t, "KEY\tID\tACTION\tTITLE")
			for i, n := range p.All {
				if i == 50 {
					fmt.Fprintf(t, "...\t(%d more; --json lists them all)\t\t\n", len(p.All)-50)
					break
				}
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", n.Key, orDash(res.Keys[n.Key]), importedAction(n, res), clip(n.Title, 60))
			}
			if err := t.Flush(); err != nil {
				return err
			}
			if n := differing(res); n > 0 {
				fmt.Fprintf(s.Out, "%s from the plan and %s left as %s: an import never changes an existing item; "+
					"change it with 'workgraph items edit' (import --dry-run lists the differences)\n",
					count(n, "existing item differs", "existing items differ"), wasWere(n), itThem(n))
			}
			return nil
		}),
	}
	addClientFlags(cmd, &f)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be created; nothing is stored")
	cmd.Flags().BoolVar(&local, "local", false, "with --dry-run: check the file here only, without asking the server")
	return cmd
}

// resolvePlanPrefixes replaces each depends_on of p that is the start of an
// existing item's id (p.Prefixes) with the whole id, through the server's
// id lookup. A prefix no item has, or several have, is a fault at its
// line (exit 2, nothing sent), as is any prefix under --local, which asks
// no server.
func (s *session) resolvePlanPrefixes(ctx context.Context, p *plan, local bool) error {
	errs := &planErrors{File: p.File}
	for _, r := range p.Prefixes {
		d, line, key := r.Node.DependsOn[r.Index], r.Node.DepLines[r.Index], r.Node.Key
		if local {
			errs.add(line, "item %q depends on unknown key %q (if it is the start of an item's id, an import without --local looks it up)", key, d)
			continue
		}
		ms, err := s.api.LookupIDs(ctx, s.cfg.Project, d, kindItem)
		if err != nil {
			return err
		}
		switch len(ms) {
		case 1:
			r.Node.DependsOn[r.Index] = ms[0].ID
		case 0:
			errs.add(line, "item %q depends on %q: no key of the plan, and no item id in project %q starts with it", key, d, s.cfg.Project)
		default:
			var ids strings.Builder
			for _, m := range ms {
				fmt.Fprintf(&ids, "\n      %s  %s", m.ID, clip(m.Label, 60))
			}
			errs.add(line, "item %q depends on %q, the start of the ids of %d items; type more of the id:%s", key, d, len(ms), ids.String())
		}
	}
	if len(errs.List) > 0 {
		return &exitError{code: ExitUsage, err: errs}
	}
	return nil
}

// maxRequestBytes is the largest plan import the server accepts
// (docs/api.md, "Limits": 16 MiB); a bigger one is refused whole with 413.
const maxRequestBytes = graph.MaxPlanRequestBytes

// checkPlanSize refuses, before anything is sent, a plan whose request the
// server would refuse for its size, and says how to import it instead.
func checkPlanSize(p *plan, req client.PlanRequest) error {
	body, err := json.Marshal(req)
	if err != nil || len(body) <= maxRequestBytes {
		return err
	}
	return usageError("%s: its %d items make a request of %s, more than the server accepts at once (%s); nothing was sent. "+
		"Split the plan into several files and import them one after the other: a dependency on an item of an earlier file "+
		"names that item's id (import --json prints each key's id)", p.File, len(p.All), byteSize(int64(len(body))), byteSize(maxRequestBytes))
}

// planCounts says how many items and dependencies an import creates, in
// the singular or the plural.
func planCounts(items, deps int) string {
	return count(items, "item", "items") + " and " + count(deps, "dependency", "dependencies")
}

// wasWere is the verb of n things in the past.
func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// printPlan prints what a plan creates (a dry run).
func printPlan(s *session, p *plan, res *client.PlanResult) error {
	if s.json {
		return printJSON(s.Out, struct {
			DryRun bool               `json:"dry_run"`
			Plan   client.PlanRequest `json:"plan"`
			Server *client.PlanResult `json:"server,omitempty"`
		}{true, p.request(true), res})
	}
	items, deps := p.newCounts(res)
	fmt.Fprintf(s.Out, "would create %s in project %q", planCounts(items, deps), s.cfg.Project)
	if res != nil && len(res.Existing) > 0 {
		fmt.Fprintf(s.Out, "; %s already and would be left alone", count(len(res.Existing), "exists", "exist"))
	}
	fmt.Fprintln(s.Out, " (dry run: nothing stored)")
	t := newTable(s.Out)
	fmt.Fprintln(t, "LINE\tKEY\tACTION\tPARENT\tDEPENDS ON\tTITLE")
	for _, n := range p.All {
		parent := "-"
		if n.Parent != nil {
			parent = n.Parent.Key
		}
		fmt.Fprintf(t, "%d\t%s\t%s\t%s\t%s\t%s\n", n.Line, n.Key, planAction(n, res), parent, orDash(strings.Join(n.DependsOn, ",")), clip(n.Title, 60))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if res != nil {
		fmt.Fprintln(s.Out, "the server checked the plan and would accept it")
	}
	return nil
}

// planAction says what importing does with one item: create it, or leave
// an existing item (same key) alone. Without the server's answer (--local)
// it cannot know which keys exist.
func planAction(n *planNode, res *client.PlanResult) string {
	if res == nil {
		return "create (unless the key exists: --local does not ask)"
	}
	ex, ok := res.Existing[n.Key]
	switch {
	case !ok:
		return "create"
	case len(ex.Differs) == 0:
		return "exists, unchanged: left alone"
	}
	return "exists, differs in " + strings.Join(ex.Differs, ",") + ": left alone"
}

// importedAction says what an import did with one item: created it, or
// left the existing item with its key alone (and where it differs from
// the plan).
func importedAction(n *planNode, res *client.PlanResult) string {
	ex, ok := res.Existing[n.Key]
	switch {
	case !ok:
		return "created"
	case len(ex.Differs) == 0:
		return "existed, unchanged"
	}
	return "existed, differs in " + strings.Join(ex.Differs, ",") + ": left alone"
}

// differing counts the existing items that differ from the plan.
func differing(res *client.PlanResult) int {
	n := 0
	for _, ex := range res.Existing {
		if len(ex.Differs) > 0 {
			n++
		}
	}
	return n
}

// itThem is the pronoun of n things.
func itThem(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}

// newCounts counts the items and dependencies an import creates: those of
// the items whose key does not exist yet (all of them without an answer).
func (p *plan) newCounts(res *client.PlanResult) (items, deps int) {
	for _, n := range p.All {
		if res != nil {
			if _, ok := res.Existing[n.Key]; ok {
				continue
			}
		}
		items++
		deps += len(n.DependsOn)
	}
	return items, deps
}

// annotatePlanError adds the file lines of the keys a server refusal
// names (e.g. the keys of a cycle); a refusal of one item, which the
// server says at the item's line, is said at the file and the line, of
// the depends_on entry it names when it names one.
func annotatePlanError(err error, p *plan) error {
	var ae *client.Error
	if !errors.As(err, &ae) {
		return err
	}
	if m := serverLineRE.FindStringSubmatch(ae.Detail); m != nil {
		line, _ := strconv.Atoi(m[1])
		var key string
		if ae.Extension("key", &key) {
			line = p.entryLine(key, m[2], line)
		}
		ae2 := *ae
		ae2.Detail = fmt.Sprintf("%s:%d: %s", p.File, line, m[2])
		return &ae2
	}
	if strings.Contains(ae.Detail, "line ") {
		return err
	}
	var keys []string
	for _, name := range []string{"cycle", "keys", "key"} {
		var list []string
		var one string
		switch {
		case ae.Extension(name, &list):
			keys = append(keys, list...)
		case ae.Extension(name, &one):
			keys = append(keys, one)
		}
	}
	var where []string
	for _, k := range keys {
		if l := p.lineOf(k); l > 0 {
			where = append(where, fmt.Sprintf("%s (%s:%d)", k, p.File, l))
		}
	}
	if len(where) > 0 {
		ae2 := *ae
		ae2.Detail = ae.Detail + "; see " + strings.Join(where, ", ")
		return &ae2
	}
	return err
}

// serverLineRE reads the line a server refusal of a plan item starts with
// (graph's planErr: "line 12: ...").
var serverLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// entryLine is the line of the depends_on entry of item key that msg (a
// server's refusal) names ("depends on <id>, ..."), else line.
func (p *plan) entryLine(key, msg string, line int) int {
	n := p.ByKey[key]
	rest, ok := strings.CutPrefix(msg, "depends on ")
	if n == nil || !ok {
		return line
	}
	for i, d := range n.DependsOn {
		if strings.HasPrefix(rest, d+",") || rest == d {
			return n.DepLines[i]
		}
	}
	return line
}

// progress writes a one-line progress indication to stderr, only when it
// is a terminal.
type progress struct {
	w     io.Writer
	on    bool
	mu    sync.Mutex
	last  time.Time
	dirty bool
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	on := false
	if ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	return &progress{w: w, on: on}
}

func (p *progress) status(format string, args ...any) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K"+format, args...)
	p.dirty = true
}

// done clears the progress line.
func (p *progress) done() {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dirty {
		fmt.Fprint(p.w, "\r\033[K")
		p.dirty = false
	}
}

// upload returns a call option that shows a bar while the plan is sent and
// then waits for the server.
func (p *progress) upload(items int) client.CallOption {
	return client.WithUploadProgress(func(body io.Reader, size int64) io.Reader {
		if !p.on || size < 64<<10 {
			p.status("creating %d items...", items)
			return body
		}
		return &countingReader{r: body, fn: func(sent int64) {
			if sent >= size {
				p.status("sent %s; the server is creating %d items in one transaction...", byteSize(size), items)
				return
			}
			if time.Since(p.last) < 100*time.Millisecond {
				return
			}
			p.last = time.Now()
			const width = 30
			filled := int(int64(width) * sent / size)
			p.status("uploading [%s%s] %3d%% %s/%s", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
				100*sent/size, byteSize(sent), byteSize(size))
		}}
	})
}

type countingReader struct {
	r  io.Reader
	n  int64
	fn func(int64)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	c.fn(c.n)
	return n, err
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
