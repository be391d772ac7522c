package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/events"
)

// appendEvent commits one event of the e2e project (straight into the
// log, as any change's transaction does).
func (e *env) appendEvent(typ string) int64 {
	e.t.Helper()
	var p uuid.UUID
	if err := e.pool.QueryRow(context.Background(), `SELECT id FROM projects WHERE name = $1`, e.project).Scan(&p); err != nil {
		e.t.Fatal(err)
	}
	n, err := events.Append(context.Background(), e.pool, events.New{Project: p, Type: typ, Actor: "system",
		Payload: map[string]any{"reason": "test"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestEventsCommand: `events` prints the log as a table or JSON lines,
// filters by type and resumes after a number; `events --follow` prints
// each new event as it is written and exits cleanly on SIGINT.
func TestEventsCommand(t *testing.T) {
	t.Parallel()
	e := setup(t)
	first := e.appendEvent(events.AttentionOpened)
	second := e.appendEvent(events.LeaseGranted)

	r := e.run(e.agentToken, nil, "events", "--json", "--types", "lease.granted")
	var ev client.Event
	if r.code != 0 || json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &ev) != nil || ev.Seq != second {
		t.Fatalf("events --json --types lease.granted: %v", r)
	}
	r = e.run(e.agentToken, nil, "events")
	if r.code != 0 || !strings.Contains(r.stdout, "SEQ") || !strings.Contains(r.stdout, "attention.opened") || !strings.Contains(r.stdout, "lease.granted") {
		t.Fatalf("events: %v", r)
	}
	// A position past the log is refused (it would skip every event up to
	// it), naming the flag's field.
	e.wantExit(e.agentToken, 2, "past the event log", "events", "--after", "999999999")
	r = e.run(e.agentToken, nil, "events", "--after", fmt.Sprint(second))
	if r.code != 0 || !strings.Contains(r.stdout, "no events") {
		t.Fatalf("events --after the newest event: %v", r)
	}
	e.wantExit(e.agentToken, 2, "types", "events", "--types", "item.exploded")
	// A --types that names no type (an unset variable, a stray comma)
	// is refused, not read as every type.
	for _, v := range []string{"", ",", " , "} {
		e.wantExit(e.agentToken, 2, "names no event type", "events", "--types", v)
	}

	c := e.cmd(e.humanToken, nil, "events", "--follow", "--json", "--after", "0")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	lines := bufio.NewScanner(out)
	next := func() client.Event {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("events --follow ended: %v", lines.Err())
		}
		var ev client.Event
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("a line of events --follow --json: %v: %s", err, lines.Bytes())
		}
		return ev
	}
	seen := map[int64]bool{}
	for !seen[second] {
		seen[next().Seq] = true
	}
	if !seen[first] {
		t.Fatalf("events --follow skipped event %d", first)
	}
	third := e.appendEvent(events.AttentionAnswer)
	for {
		ev := next()
		if ev.Seq == third {
			break
		}
		if seen[ev.Seq] {
			t.Fatalf("event %d printed twice", ev.Seq)
		}
	}
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("events --follow after SIGINT: %v", err)
	}
}

// TestEventsItemPrefix: `events --item` takes the first characters of an
// item's id, as the table's ITEM column shows them, like every other
// command that names an item.
func TestEventsItemPrefix(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := e.item("Write the migration"), e.item("Add the endpoint")
	r := e.run(e.agentToken, nil, "events", "--json", "--item", a.ID[:8])
	if r.code != 0 {
		t.Fatalf("events --item %s: %v", a.ID[:8], r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for _, l := range lines {
		var ev client.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.ItemID == nil || *ev.ItemID != a.ID {
			t.Fatalf("events --item %s printed %s (want only item %s's events; %s is another)", a.ID[:8], l, a.ID, b.ID)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"item.created"`) {
		t.Fatalf("events --item %s: %v, want the item's one event", a.ID[:8], r)
	}
	e.wantExit(e.agentToken, 2, "first characters", "events", "--item", "zz")
	e.wantExit(e.agentToken, 5, "no item id starts with", "events", "--item", "ffffffff")
}

// TestEventsAllWithItem: --item names an item of one project, --all reads
// every project; the command refuses the combination itself (exit 2,
// naming both flags) instead of passing the server's "unknown query
// parameter item_id" on.
func TestEventsAllWithItem(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("Ship it")
	r := e.wantExit(e.agentToken, 2, "--item cannot be used with --all", "events", "--all", "--item", it.ID)
	if strings.Contains(r.stderr, "item_id") {
		t.Fatalf("the server's refusal was passed on: %v", r)
	}
}

// TestBlankFiltersRefused: a list's filter flag given an empty or blank
// value (--worker "$UNSET") exits 2 naming the flag, changing nothing.
// The client sent no filter for it and listed everything (items ls
// --state "" printed every item), where the server refuses ?state= for
// that reason.
func TestBlankFiltersRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.item("Ship it")
	for _, c := range [][]string{
		{"items", "ls", "--state", ""},
		{"items", "ls", "--label", " "},
		{"items", "ls", "--parent", ""},
		{"items", "ls", "--text", ""},
		{"items", "ls", "--sort", ""},
		{"items", "ls", "--cursor", ""},
		{"history", "--worker", ""},
		{"history", "--outcome", ""},
		{"history", "--item", ""},
		{"history", "--since", ""},
		{"history", "--until", " "},
		{"history", "--sort", ""},
		{"history", "--cursor", ""},
		{"attention", "ls", "--state", ""},
		{"attention", "ls", "--item", ""},
		{"events", "--item", ""},
		{"workers", "--cursor", ""},
	} {
		r := e.wantExit(e.humanToken, 2, "an empty filter would match everything", c...)
		if !strings.Contains(r.stderr, c[len(c)-2]) {
			t.Fatalf("%v: the message does not name the flag: %v", c, r)
		}
	}
}
