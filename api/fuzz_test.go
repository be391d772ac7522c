package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/server"
)

// The fuzz targets send fuzzed request bodies, query strings, cursors and
// path segments to a real server (the api handlers over a test database of
// its own) and check each answer: never a 5xx (nor a panic, which shows as
// a 500 or a broken connection), and a refused request (4xx) leaves the
// stored state (items, leases, attention, dependency edges) as it was.
// Their seeds (f.Add below, and the corpora in testdata/fuzz/<Name>/) also
// run in plain go test; make fuzz-short fuzzes each briefly.

// fuzzFixture is the server the targets talk to. Its clock is a stub that
// never moves, so no lease expires and the stored state changes only
// through the requests sent.
type fuzzFixture struct {
	*env
	log                      *fuzzLog
	human, agent, worker     token
	seq                      int
	target, lease, attention string // resources the routes name, renewed when used up
	webhook                  string // a webhook of the project, made on first use
	dep                      string // an item a body may name as "{dep}"
}

func fuzzSetup(f *testing.F) *fuzzFixture {
	log := &fuzzLog{}
	e := setup(f, func(c *server.Config) {
		c.Clock = clock.NewStub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		c.Logger = slog.New(slog.NewTextHandler(log, nil))
	})
	e.mustProject("alpha")
	fx := &fuzzFixture{env: e, log: log,
		human:  e.mustToken("alpha", "ann", "human"),
		agent:  e.mustToken("alpha", "bot", "agent"),
		worker: e.mustToken("alpha", "fixture-worker", "agent"),
	}
	fx.dep = fx.newItem()
	return fx
}

// fuzzLog keeps the server's log, to show the cause of a 5xx.
type fuzzLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *fuzzLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() > 1<<20 {
		l.buf.Reset()
	}
	return l.buf.Write(p)
}

func (l *fuzzLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.buf.String()
	return s[max(0, len(s)-3000):]
}

// newItem creates a ready item with a label of its own and returns its id.
func (fx *fuzzFixture) newItem() string {
	fx.seq++
	var it item
	fx.do("POST", "/v1/projects/alpha/items", fx.human.Token,
		map[string]any{"title": fmt.Sprintf("fixture %d", fx.seq), "labels": []string{fmt.Sprintf("fx-%d", fx.seq)}}).ok(fx.t, 201, &it)
	return it.ID
}

// targetItem is a ready item (a new one once the last is not ready).
func (fx *fuzzFixture) targetItem() string {
	if fx.target == "" || fx.count("SELECT count(*) FROM items WHERE id = $1 AND ready", fx.target) == 0 {
		fx.target = fx.newItem()
	}
	return fx.target
}

// liveLease is a live lease of the fixture's worker token at epoch 1 (the
// first lease of a new item, claimed by its own label).
func (fx *fuzzFixture) liveLease() string {
	if fx.lease != "" && fx.count("SELECT count(*) FROM leases WHERE id = $1 AND ended_at IS NULL", fx.lease) == 1 {
		return fx.lease
	}
	fx.newItem()
	var c claimed
	fx.do("POST", "/v1/projects/alpha/claims", fx.worker.Token,
		map[string]any{"worker": "fixture", "labels": []string{fmt.Sprintf("fx-%d", fx.seq)}}).ok(fx.t, 201, &c)
	if c.Lease.Epoch != 1 {
		fx.t.Fatalf("fixture lease at epoch %d, want 1", c.Lease.Epoch)
	}
	fx.lease = c.Lease.ID
	return fx.lease
}

// openAttention is an open attention request (a person's hold on a new
// item once the last is closed).
func (fx *fuzzFixture) openAttention() string {
	if fx.attention != "" && fx.count("SELECT count(*) FROM attention_requests WHERE id = $1 AND state = 'open'", fx.attention) == 1 {
		return fx.attention
	}
	var a attn
	fx.do("POST", "/v1/projects/alpha/items/"+fx.newItem()+"/attention", fx.human.Token,
		map[string]any{"question": "hold"}).ok(fx.t, 201, &a)
	fx.attention = a.ID
	return fx.attention
}

// webhookID is a webhook of the project (it is never removed: no fuzzed
// route deletes).
func (fx *fuzzFixture) webhookID() string {
	if fx.webhook == "" {
		var w struct {
			ID string `json:"id"`
		}
		fx.do("POST", "/v1/projects/alpha/webhooks", fx.human.Token,
			map[string]any{"url": "https://hooks.example.com/workgraph"}).ok(fx.t, 201, &w)
		fx.webhook = w.ID
	}
	return fx.webhook
}

// bodyRoute is a POST, PUT or PATCH route whose body is fuzzed: route is
// its OpenAPI path (TestFuzzCoversEveryRoute), path fills in the resources
// it names, sent as the token "as" (human, agent, worker, admin).
type bodyRoute struct {
	method, as, route string
	path              func(fx *fuzzFixture) string
}

func (fx *fuzzFixture) tokenOf(as string) string {
	switch as {
	case "agent":
		return fx.agent.Token
	case "worker":
		return fx.worker.Token
	case "admin":
		return adminToken
	}
	return fx.human.Token
}

func fixed(p string) func(*fuzzFixture) string { return func(*fuzzFixture) string { return p } }

var (
	itemRoutes = []bodyRoute{
		{"POST", "human", "/v1/projects/{project}/items", fixed("/v1/projects/alpha/items")},
		{"POST", "agent", "/v1/projects/{project}/items", fixed("/v1/projects/alpha/items")},
		{"PATCH", "human", "/v1/projects/{project}/items/{id}", func(fx *fuzzFixture) string { return "/v1/projects/alpha/items/" + fx.targetItem() }},
		{"POST", "human", "/v1/projects/{project}/items/{id}/cancel", func(fx *fuzzFixture) string { return "/v1/projects/alpha/items/" + fx.targetItem() + "/cancel" }},
		{"POST", "human", "/v1/projects/{project}/items/{id}/attention", func(fx *fuzzFixture) string { return "/v1/projects/alpha/items/" + fx.targetItem() + "/attention" }},
		{"POST", "agent", "/v1/projects/{project}/items/{id}/dependencies", func(fx *fuzzFixture) string { return "/v1/projects/alpha/items/" + fx.targetItem() + "/dependencies" }},
		{"POST", "agent", "/v1/projects/{project}/plans", fixed("/v1/projects/alpha/plans")},
	}
	leaseRoutes = []bodyRoute{
		{"POST", "agent", "/v1/projects/{project}/claims", fixed("/v1/projects/alpha/claims")},
		{"POST", "worker", "/v1/leases/{id}/heartbeat", func(fx *fuzzFixture) string { return "/v1/leases/" + fx.liveLease() + "/heartbeat" }},
		{"POST", "worker", "/v1/leases/{id}/complete", func(fx *fuzzFixture) string { return "/v1/leases/" + fx.liveLease() + "/complete" }},
		{"POST", "worker", "/v1/leases/{id}/release", func(fx *fuzzFixture) string { return "/v1/leases/" + fx.liveLease() + "/release" }},
		{"POST", "worker", "/v1/leases/{id}/fail", func(fx *fuzzFixture) string { return "/v1/leases/" + fx.liveLease() + "/fail" }},
		{"POST", "worker", "/v1/leases/{id}/decompose", func(fx *fuzzFixture) string { return "/v1/leases/" + fx.liveLease() + "/decompose" }},
		{"POST", "worker", "/v1/leases/{id}/attention", func(fx *fuzzFixture) string { return "/v1/leases/" + fx.liveLease() + "/attention" }},
		{"POST", "human", "/v1/leases/{id}/stop", func(fx *fuzzFixture) string { return "/v1/leases/" + fx.liveLease() + "/stop" }},
		{"POST", "worker", "/v1/projects/{project}/completions", fixed("/v1/projects/alpha/completions")},
		{"POST", "worker", "/v1/projects/{project}/heartbeats", fixed("/v1/projects/alpha/heartbeats")},
	}
	attentionRoutes = []bodyRoute{
		{"POST", "human", "/v1/attention/{id}/resolve", func(fx *fuzzFixture) string { return "/v1/attention/" + fx.openAttention() + "/resolve" }},
		{"POST", "human", "/v1/attention/{id}/dismiss", func(fx *fuzzFixture) string { return "/v1/attention/" + fx.openAttention() + "/dismiss" }},
	}
	settingsRoutes = []bodyRoute{
		{"PUT", "human", "/v1/projects/{project}/items/{id}/budget", func(fx *fuzzFixture) string { return "/v1/projects/alpha/items/" + fx.targetItem() + "/budget" }},
		{"PATCH", "human", "/v1/projects/{project}/notifications", fixed("/v1/projects/alpha/notifications")},
		{"POST", "human", "/v1/projects/{project}/webhooks", fixed("/v1/projects/alpha/webhooks")},
		{"PATCH", "human", "/v1/projects/{project}/webhooks/{id}", func(fx *fuzzFixture) string { return "/v1/projects/alpha/webhooks/" + fx.webhookID() }},
		{"POST", "human", "/v1/projects/{project}/webhooks/{id}/secret", func(fx *fuzzFixture) string { return "/v1/projects/alpha/webhooks/" + fx.webhookID() + "/secret" }},
	}
	adminRoutes = []bodyRoute{
		{"POST", "admin", "/v1/projects", fixed("/v1/projects")},
		{"POST", "admin", "/v1/projects/{project}/tokens", fixed("/v1/projects/alpha/tokens")},
		{"PATCH", "admin", "/v1/projects/{project}", fixed("/v1/projects/alpha")},
	}
)

// check sends one request and asserts the fuzz properties.
func (fx *fuzzFixture) check(t *testing.T, method, path, as string, body []byte) {
	fx.t = t
	before := digest(t, fx.pool)
	req, err := http.NewRequest(method, fx.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+fx.tokenOf(as))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s %q: %v (did the handler panic?)\nserver log:\n%s", method, path, body, err, fx.log.tail())
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode >= 500 {
		t.Fatalf("%s %s %q: %d %s\nserver log:\n%s", method, path, body, res.StatusCode, answer, fx.log.tail())
	}
	if res.StatusCode >= 400 {
		if after := digest(t, fx.pool); after != before {
			t.Fatalf("%s %s %q: refused (%d %s) but the stored state changed:\n before %s\n after  %s",
				method, path, body, res.StatusCode, answer, before, after)
		}
	}
}

// fuzzBodies runs the routes' bodies: route picks the route (modulo),
// "{dep}" in a body stands for an existing item's id and "{lease}" for a
// live lease of the fixture's worker (at epoch 1). seeds are each
// route's own (by index); commonSeeds go to every route.
func fuzzBodies(f *testing.F, routes []bodyRoute, seeds map[int][]string) {
	fx := fuzzSetup(f)
	for i := range routes {
		for _, s := range append(commonSeeds, seeds[i]...) {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := routes[int(route)%len(routes)]
		if longPoll(body) {
			t.Skip("a long poll: the claim would wait for work")
		}
		fx.t = t
		body = bytes.ReplaceAll(body, []byte("{dep}"), []byte(fx.dep))
		if bytes.Contains(body, []byte("{lease}")) {
			body = bytes.ReplaceAll(body, []byte("{lease}"), []byte(fx.liveLease()))
		}
		fx.check(t, r.method, r.path(fx), r.as, body)
	})
}

// longPoll reports whether a body asks a claim to wait (wait_seconds > 0,
// matched as the server's decoder matches keys: without case).
func longPoll(body []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	for k, v := range m {
		var n float64
		if strings.EqualFold(k, "wait_seconds") && json.Unmarshal(v, &n) == nil && n != 0 {
			return true
		}
	}
	return false
}

// commonSeeds are bodies every route gets besides its own.
var commonSeeds = []string{``, `{}`, `null`, `[]`, `"x"`, `{"epoch": 1}`}

func FuzzItemBody(f *testing.F) {
	fuzzBodies(f, itemRoutes, map[int][]string{
		0: {`{"title": "t", "body": "b", "priority": 3, "labels": ["a", "b:c"], "metadata": {"k": [1, 2.5, true, null, {"n": "v"}]}}`},
		1: {`{"title": "t", "depends_on": ["{dep}"], "parent_id": "{dep}"}`},
		2: {`{"title": "renamed", "version": 1, "labels": [], "metadata": {}}`},
		3: {`{"reason": "no longer needed"}`},
		4: {`{"question": "wait for me"}`},
		5: {`{"depends_on": "{dep}"}`},
		6: {`{"items": [{"key": "a", "title": "A"}, {"key": "b", "title": "B", "depends_on": ["a", "{dep}"], "children": [{"key": "c", "title": "C"}]}], "dry_run": true}`},
	})
}

func FuzzLeaseBody(f *testing.F) {
	fuzzBodies(f, leaseRoutes, map[int][]string{
		0: {`{"worker": "w1", "lease_seconds": 300, "labels": ["fx-1"]}`, `{"worker": "w1", "wait_seconds": 0}`},
		1: {`{"epoch": 1, "progress": {"pct": 50}, "lease_seconds": 120, "worker_time": "2026-01-01T00:00:00Z"}`},
		2: {`{"epoch": 1, "result": {"ok": true, "files": ["a.go"]}}`, `{"epoch": 2, "result": 1}`},
		3: {`{"epoch": 1, "reason": "giving up"}`},
		4: {`{"epoch": 1, "error": {"message": "boom", "code": 3}}`, `{"epoch": 1, "error": "boom", "details": {"trace": "x"}}`},
		5: {`{"epoch": 1, "children": [{"key": "a", "title": "A"}, {"key": "b", "title": "B", "depends_on_keys": ["a"], "labels": ["x"]}]}`},
		6: {`{"epoch": 1, "question": "which?", "suggested_answers": ["a", "b"], "context": {"k": 1}, "blocking": false}`},
		7: {`{"reason": "stop please"}`},
		8: {`[{"lease_id": "{lease}", "epoch": 1, "result": {"ok": true}}]`, `[{"lease_id": "{lease}", "epoch": 2, "result": 1}, {"lease_id": "x"}]`, `[]`},
		9: {`[{"lease_id": "{lease}", "epoch": 1, "progress": {"pct": 5}, "lease_seconds": 60}]`, `[{"lease_id": "{lease}"}]`},
	})
}

func FuzzAttentionBody(f *testing.F) {
	fuzzBodies(f, attentionRoutes, map[int][]string{0: {`{"answer": "yes"}`}, 1: {`{"note": "not needed"}`}})
}

func FuzzAdminBody(f *testing.F) {
	fuzzBodies(f, adminRoutes, map[int][]string{0: {`{"name": "beta"}`}, 1: {`{"name": "bot2", "role": "agent"}`, `{"name": "x", "role": "root"}`},
		2: {`{"on_expiry": "reconcile", "attention_due_in_seconds": 3600, "quiet_after_seconds": 60, "no_progress_after_seconds": 0}`, `{"on_expiry": "never"}`}})
}

func FuzzSettingsBody(f *testing.F) {
	fuzzBodies(f, settingsRoutes, map[int][]string{
		0: {`{"max_tokens": 1000, "max_cost_usd": 2.5, "max_wall_seconds": 60, "max_depth": 3}`, `{"max_tokens": -1}`},
		1: {`{"answer_links": true, "answer_link_ttl_seconds": 3600}`, `{"answer_link_ttl_seconds": -5}`},
		2: {`{"url": "https://hooks.example.com/a", "event_types": ["item.created"], "format": "slack", "description": "d"}`, `{"url": "http://127.0.0.1/x"}`},
		3: {`{"enabled": false, "event_types": [], "recipient": "ops"}`, `{"url": "ftp://x"}`},
		4: {`{"grace_seconds": 60}`, `{"grace_seconds": -1}`},
	})
}

// queryRoutes are the GET routes whose query string (and {project} path
// segment) is fuzzed.
var queryRoutes = []string{
	"/v1/projects/{project}/items",
	"/v1/projects/{project}/leases",
	"/v1/projects/{project}/items/{dep}/leases",
	"/v1/projects/{project}/attention",
	"/v1/projects/{project}/graph",
	"/v1/projects/{project}/items/{dep}/graph",
	"/v1/projects/{project}/workers",
	"/v1/projects/{project}",
	"/v1/projects",
	"/v1/projects/{project}/events",
	"/v1/projects/{project}/ids",
	"/v1/projects/{project}/webhooks/{webhook}/deliveries",
	"/v1/events",
	"/v1/projects/{project}/items/{dep}/attention",
	"/v1/leases/{lease}",
}

// rawQuery makes s sendable as a query string while keeping its structure
// (& = % as given): bytes a URL may not carry are percent-encoded.
func rawQuery(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '#' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func FuzzQuery(f *testing.F) {
	fx := fuzzSetup(f)
	// The lease of /v1/leases/{lease}, claimed before the webhook exists:
	// a claim's events delivered to it later would change its stored
	// state under a refused request.
	fx.liveLease()
	seeds := []string{"", "limit=1", "limit=0", "limit=501", "page_size=5", "limit=1&page_size=1",
		"state=ready,leased&label=a&q=fix", "state=bogus", "parent_id=x", "parent_id={dep}",
		"worker=w1&outcome=completed&since=2026-01-01T00:00:00Z&until=2026-01-02T00:00:00%2B01:00",
		"outcome=nope", "since=yesterday", "item_id={dep}", "around={dep}&depth=2&limit=10", "depth=99999999999999999999",
		"q=%00", "q=%FF%FE", "label=%C0%AF", "worker=a%00b", "unknown=1", "%00=1", "q=%", "cursor=%ZZ"}
	for i, s := range seeds {
		f.Add(uint8(i), "alpha", s) // each on one route, and on the item list
		f.Add(uint8(0), "alpha", s)
	}
	for _, p := range []string{"", "beta", "a\x00b", "a\xffb", "..", "%", strings.Repeat("p", 300)} {
		f.Add(uint8(0), p, "")
	}
	f.Fuzz(func(t *testing.T, route uint8, project, query string) {
		if project == "" {
			t.Skip("an empty path segment is another route")
		}
		q := strings.ReplaceAll(rawQuery(query), "{dep}", fx.dep)
		if waits(q) {
			t.Skip("a long poll: the events list would wait for events")
		}
		fx.t = t
		tmpl := queryRoutes[int(route)%len(queryRoutes)]
		p := strings.ReplaceAll(tmpl, "{project}", url.PathEscape(project))
		p = strings.ReplaceAll(p, "{dep}", fx.dep)
		if strings.Contains(p, "{webhook}") {
			p = strings.ReplaceAll(p, "{webhook}", fx.webhookID())
		}
		if strings.Contains(p, "{lease}") {
			p = strings.ReplaceAll(p, "{lease}", fx.liveLease())
		}
		as := "human"
		if strings.HasPrefix(tmpl, "/v1/events") {
			as = "admin" // the log of every project
		}
		fx.check(t, "GET", p+"?"+q, as, nil)
	})
}

// waits reports whether a query string asks the events list to wait:
// a wait_seconds the server reads as a number other than 0 (it reads the
// keys as net/url decodes them, and the first value).
func waits(query string) bool {
	for _, pair := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(pair, "=")
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || key != "wait_seconds" {
			continue
		}
		if n, err := strconv.Atoi(val); err == nil && n != 0 {
			return true
		}
	}
	return false
}

// cursorRoutes are the list routes that page with a cursor.
var cursorRoutes = []string{
	"/v1/projects/alpha/items",
	"/v1/projects/alpha/leases",
	"/v1/projects/alpha/attention",
	"/v1/projects/alpha/items/{dep}/leases",
	"/v1/projects/alpha/workers",
	"/v1/projects/alpha/items/{dep}/attention",
	"/v1/leases/{lease}",
}

func FuzzCursor(f *testing.F) {
	fx := fuzzSetup(f)
	// Real cursors, as the lists return them, and their likes.
	fx.newItem()
	fx.liveLease()
	fx.openAttention()
	fx.openAttention()
	var real []string
	for _, p := range []string{"/v1/projects/alpha/items", "/v1/projects/alpha/attention", "/v1/projects/alpha/workers"} {
		var page struct {
			NextCursor *string `json:"next_cursor"`
		}
		fx.do("GET", p+"?limit=1", fx.human.Token, nil).ok(f, 200, &page)
		if page.NextCursor != nil {
			real = append(real, *page.NextCursor)
		}
	}
	seeds := append(real, "", "x", "aXRlbXM6MQ", "aXRlbXM6LTE", "aXRlbXM6OTk5OTk5OTk5OTk5OTk5OTk5OTk5", "bGVhc2VzOjE",
		"aXRlbXM6MQ==", "aXRlbXM6AQ", "\x00", "\xff\xfe",
		"d29ya2VyczozMQ", "d29ya2Vyczo", "d29ya2VyczoA", "d29ya2Vyczr__g")
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	f.Fuzz(func(t *testing.T, route uint8, cursor string) {
		p := strings.ReplaceAll(cursorRoutes[int(route)%len(cursorRoutes)], "{dep}", fx.dep)
		if strings.Contains(p, "{lease}") {
			fx.t = t
			p = strings.ReplaceAll(p, "{lease}", fx.liveLease())
		}
		fx.check(t, "GET", p+"?limit=1&cursor="+url.QueryEscape(cursor), "human", nil)
	})
}
