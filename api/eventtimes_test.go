package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/wire"
)

// timeLike is a string that begins as a date and time do; utcTime is the
// one form every time the API emits has: RFC 3339 in UTC with "Z".
var (
	timeLike = regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d`)
	utcTime  = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$`)
)

// checkTimes fails for every time-like string anywhere in the JSON raw
// that is not in utcTime's form; where names what raw is.
func checkTimes(t *testing.T, where string, raw []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v: %s", where, err, raw)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			if timeLike.MatchString(x) && !utcTime.MatchString(x) {
				t.Errorf("%s: %s is %q, not RFC 3339 in UTC with Z", where, path, x)
			}
		}
	}
	walk("", v)
}

// TestEventTimesOneForm walks a lifecycle that emits every event type and
// checks every time in every payload, REST answer, stream frame and
// webhook body against one form (RFC 3339, UTC, "Z"). The database
// session runs in a zone east of UTC with a 45-minute offset, where
// PostgreSQL's own JSON of a timestamptz would say "+05:45".
func TestEventTimesOneForm(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	var (
		mu     sync.Mutex
		bodies [][]byte
		got    = make(chan struct{}, 1000)
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		got <- struct{}{}
	}))
	t.Cleanup(receiver.Close)
	f := eventsSetup(t, func(c *server.Config) {
		c.DatabaseURL = url + sep + "timezone=Asia/Kathmandu"
		c.Webhooks.AllowPrivate = true
	})
	answers := map[string][]byte{}
	step := func(name string, r resp, status int, v any) {
		t.Helper()
		r.ok(t, status, v)
		if len(r.body) > 0 {
			answers[name] = r.body
		}
	}
	step("webhook", f.do("POST", "/v1/projects/alpha/webhooks", f.human.Token,
		map[string]any{"url": receiver.URL, "event_types": events.Types}), 201, nil)

	// item.created, item.updated, token.created (the fixture's tokens).
	it := f.mustItem(f.human.Token, map[string]any{"title": "one"})
	step("update", f.do("PATCH", "/v1/projects/alpha/items/"+it.ID, f.human.Token, map[string]any{"title": "one, renamed"}), 200, nil)
	step("plan", f.do("POST", "/v1/projects/alpha/plans", f.agent.Token,
		map[string]any{"items": []any{map[string]any{"key": "later", "title": "later", "priority": -5}}}), 201, nil)
	// lease.granted, item.state_changed; the heartbeat's answer.
	var c claimed
	step("claim", f.claim(f.agent.Token, map[string]any{"worker": "w1"}), 201, &c)
	step("heartbeat", f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}), 200, nil)
	// attention.opened (with due_at), answered, dismissed, overdue.
	ask := func(q string) attn {
		var out struct{ Attention attn }
		step("ask "+q, f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{
			"epoch": c.Lease.Epoch, "question": q, "blocking": false, "due_in_seconds": 60}), 201, &out)
		return out.Attention
	}
	step("resolve", f.do("POST", "/v1/attention/"+ask("answered?").ID+"/resolve", f.human.Token, map[string]any{"answer": "yes"}), 200, nil)
	step("dismiss", f.do("POST", "/v1/attention/"+ask("dismissed?").ID+"/dismiss", f.human.Token, map[string]any{}), 200, nil)
	ask("overdue?")
	later := clock.NewStub(time.Now().Add(time.Hour))
	if fired, err := attention.NewService(f.pool, later, attention.Config{}).FireOverdue(context.Background(), f.alpha); err != nil || len(fired) != 1 {
		t.Fatalf("FireOverdue: %d fired, %v", len(fired), err)
	}
	// lease.ended and item.state_changed to blocked with retry_after; a
	// heartbeat of the ended lease: lease.refused.
	step("fail", f.mutate(f.agent.Token, c.Lease.ID, "fail", map[string]any{"epoch": c.Lease.Epoch, "error": "boom"}), 200, nil)
	f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).problem(t, 409, "lease_lost")
	step("history", f.do("GET", "/v1/projects/alpha/leases", f.human.Token, nil), 200, nil)
	step("item", f.do("GET", "/v1/projects/alpha/items/"+it.ID, f.human.Token, nil), 200, nil)
	// token.revoked.
	extra := f.mustToken("alpha", "gone", "human")
	step("revoke", f.do("DELETE", "/v1/projects/alpha/tokens/"+extra.ID, adminToken, nil), 204, nil)

	r := f.do("GET", "/v1/projects/alpha/events?limit=1000", f.human.Token, nil)
	var page wire.EventPage
	r.ok(t, 200, &page)
	checkTimes(t, "GET events", r.body)
	seen := map[string]bool{}
	for _, e := range page.Events {
		seen[e.Type] = true
		checkTimes(t, "payload of "+e.Type, e.Payload)
	}
	for _, typ := range events.Types {
		if !seen[typ] {
			t.Errorf("the lifecycle emitted no %s event (types seen: %v)", typ, seen)
		}
	}
	for _, k := range []string{`"expires_at"`, `"due_at"`, `"retry_after"`} {
		if !strings.Contains(string(r.body), k) {
			t.Errorf("no payload carries %s: the check saw none of its times", k)
		}
	}
	for name, b := range answers {
		checkTimes(t, "answer of "+name, b)
	}

	// The same events as stream frames.
	last := page.Events[len(page.Events)-1].Seq
	s := f.openStream(t, "/v1/projects/alpha/events/stream", f.human.Token, "0")
	for frames := 0; ; {
		select {
		case m, ok := <-s.read:
			if !ok {
				t.Fatal("the stream ended")
			}
			if m.data == "" {
				continue
			}
			frames++
			checkTimes(t, "stream frame "+m.id, []byte(m.data))
			if m.id == fmt.Sprint(last) {
				if frames != len(page.Events) {
					t.Fatalf("%d frames up to %d, want %d", frames, last, len(page.Events))
				}
				goto webhooks
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the stream did not reach the last event in 30 s")
		}
	}
webhooks:
	// Every type delivered to the webhook, each body checked.
	types := map[string]bool{}
	checked := 0
	for len(types) < len(events.Types) {
		mu.Lock()
		for _, b := range bodies[checked:] {
			var body struct{ Type string }
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatal(err)
			}
			types[body.Type] = true
			checkTimes(t, "webhook body of "+body.Type, b)
		}
		checked = len(bodies)
		mu.Unlock()
		if len(types) == len(events.Types) {
			break
		}
		select {
		case <-got:
		case <-time.After(30 * time.Second):
			t.Fatalf("in 30 s the webhook got bodies of %v only, not of every type", types)
		}
	}
}
