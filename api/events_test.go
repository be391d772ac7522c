package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/wire"
)

// eventsFixture: projects alpha and beta, a human and an agent of alpha,
// a human of beta.
type eventsFixture struct {
	itemFixture
	alpha, beta uuid.UUID
}

func eventsSetup(t *testing.T, tune ...func(*server.Config)) eventsFixture {
	t.Helper()
	e := setup(t, tune...)
	f := itemFixture{env: e}
	a, b := e.mustProject("alpha"), e.mustProject("beta")
	f.human = e.mustToken("alpha", "ann", "human")
	f.agent = e.mustToken("alpha", "bot", "agent")
	f.otherHuman = e.mustToken("beta", "bea", "human")
	return eventsFixture{itemFixture: f, alpha: uuid.MustParse(a.ID), beta: uuid.MustParse(b.ID)}
}

// appendEvent commits one event of project p (through the database, as
// any replica's writes would be).
func (f eventsFixture) appendEvent(p uuid.UUID, typ string) int64 {
	f.t.Helper()
	item := uuid.New()
	n, err := events.Append(context.Background(), f.pool, events.New{Project: p, Type: typ, Actor: "system", ItemID: &item,
		Payload: map[string]any{"n": 1}})
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// stored is the numbers of project p's events in the database.
func (f eventsFixture) stored(p uuid.UUID) []int64 {
	f.t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT seq FROM events WHERE project_id = $1 ORDER BY seq`, p)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func seqs(evs []wire.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func TestEventsList(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t)
	p := "/v1/projects/alpha/events"
	for range 3 {
		f.appendEvent(f.alpha, events.AttentionOpened)
	}
	f.appendEvent(f.beta, events.AttentionOpened)

	t.Run("OK", func(t *testing.T) {
		var page wire.EventPage
		f.do("GET", p, f.agent.Token, nil).ok(t, 200, &page)
		want := f.stored(f.alpha)
		if fmt.Sprint(seqs(page.Events)) != fmt.Sprint(want) || page.NextAfter < want[len(want)-1] {
			t.Fatalf("events %v next %d, want %v", seqs(page.Events), page.NextAfter, want)
		}
		mine := 0
		for _, e := range page.Events {
			if e.ProjectID != f.alpha.String() {
				t.Fatalf("event of another project: %+v", e)
			}
			if e.Type == events.AttentionOpened && e.Actor == "system" {
				mine++
				if e.ItemID == nil || string(e.Payload) != `{"n":1}` {
					t.Fatalf("event %+v", e)
				}
			}
		}
		if mine != 3 {
			t.Fatalf("%d of the 3 events appended were read", mine)
		}
		var rest wire.EventPage
		f.do("GET", fmt.Sprintf("%s?after=%d", p, page.NextAfter), f.human.Token, nil).ok(t, 200, &rest)
		if len(rest.Events) != 0 || rest.NextAfter < page.NextAfter {
			t.Fatalf("after next_after: %+v", rest)
		}
	})
	t.Run("Pages", func(t *testing.T) {
		var got []int64
		after := int64(0)
		for range 10 {
			var page wire.EventPage
			f.do("GET", fmt.Sprintf("%s?limit=1&after=%d", p, after), f.agent.Token, nil).ok(t, 200, &page)
			got = append(got, seqs(page.Events)...)
			after = page.NextAfter
		}
		if fmt.Sprint(got) != fmt.Sprint(f.stored(f.alpha)) {
			t.Fatalf("paged %v, stored %v", got, f.stored(f.alpha))
		}
	})
	t.Run("Types", func(t *testing.T) {
		n := f.appendEvent(f.alpha, events.LeaseGranted)
		var page wire.EventPage
		f.do("GET", p+"?types=lease.granted,lease.ended", f.agent.Token, nil).ok(t, 200, &page)
		if len(page.Events) != 1 || page.Events[0].Seq != n || page.Events[0].Type != events.LeaseGranted {
			t.Fatalf("types filter: %+v", page.Events)
		}
	})
	t.Run("ItemID", func(t *testing.T) {
		var one wire.EventPage
		f.do("GET", p+"?types=attention.opened", f.agent.Token, nil).ok(t, 200, &one)
		id := *one.Events[0].ItemID
		var page wire.EventPage
		f.do("GET", p+"?item_id="+id, f.agent.Token, nil).ok(t, 200, &page)
		if len(page.Events) != 1 || *page.Events[0].ItemID != id {
			t.Fatalf("item filter: %+v", page.Events)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, q := range []string{"after=-1", "after=x", "limit=0", "limit=1001", "types=item.exploded", "wait_seconds=61", "wait_seconds=-1", "item_id=nope", "colour=red"} {
			f.do("GET", p+"?"+q, f.agent.Token, nil).problem(t, 400, "invalid_argument")
			f.do("GET", p+"/stream?"+q, f.agent.Token, nil).problem(t, 400, "invalid_argument")
		}
		f.do("GET", p+"/stream?after=-1", f.agent.Token, nil).problem(t, 400, "invalid_argument")
		f.do("GET", p+"/stream", f.agent.Token, nil, withHeader("Last-Event-ID", "x")).problem(t, 400, "invalid_argument")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f.do("GET", p, f.otherHuman.Token, nil).problem(t, 404, "not_found")
		f.do("GET", p+"/stream", f.otherHuman.Token, nil).problem(t, 404, "not_found")
	})
	t.Run("AllProjects", func(t *testing.T) {
		var page wire.EventPage
		f.do("GET", "/v1/events", adminToken, nil).ok(t, 200, &page)
		projects := map[string]bool{}
		for _, e := range page.Events {
			projects[e.ProjectID] = true
		}
		if !projects[f.alpha.String()] || !projects[f.beta.String()] {
			t.Fatalf("the admin read names projects %v", projects)
		}
		f.do("GET", "/v1/events", f.human.Token, nil).problem(t, 403, "forbidden")
		f.do("GET", "/v1/events/stream", f.agent.Token, nil).problem(t, 403, "forbidden")
		f.do("GET", "/v1/events?item_id="+uuid.NewString(), adminToken, nil).problem(t, 400, "invalid_argument")
	})
}

// TestEventsLongPoll: a long poll with nothing to read waits, answers as
// soon as a matching event commits, and answers with nothing once its
// wait is over.
func TestEventsLongPoll(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t)
	var start wire.EventPage
	f.do("GET", "/v1/projects/alpha/events", f.agent.Token, nil).ok(t, 200, &start)

	got := make(chan wire.EventPage, 1)
	go func() {
		var page wire.EventPage
		f.do("GET", fmt.Sprintf("/v1/projects/alpha/events?after=%d&wait_seconds=60&types=attention.opened", start.NextAfter), f.agent.Token, nil).ok(t, 200, &page)
		got <- page
	}()
	// Neither another project's event nor another type answers it.
	f.appendEvent(f.beta, events.AttentionOpened)
	f.appendEvent(f.alpha, events.LeaseGranted)
	n := f.appendEvent(f.alpha, events.AttentionOpened)
	page := <-got
	if len(page.Events) != 1 || page.Events[0].Seq != n || page.NextAfter < n {
		t.Fatalf("long poll answered %+v, want event %d", page, n)
	}

	var empty wire.EventPage
	f.do("GET", fmt.Sprintf("/v1/projects/alpha/events?after=%d&wait_seconds=1", page.NextAfter), f.agent.Token, nil).ok(t, 200, &empty)
	if len(empty.Events) != 0 || empty.NextAfter < page.NextAfter {
		t.Fatalf("an expired long poll answered %+v", empty)
	}
}

// sse is one server-sent event, or a comment.
type sse struct {
	id, event, data, comment string
}

// stream is an open event stream.
type stream struct {
	res  *http.Response
	read chan sse
}

// openStream opens path as an event stream; lastID, when set, is sent as
// Last-Event-ID. The stream is closed at the test's end.
func (f eventsFixture) openStream(t *testing.T, path, token, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", f.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if err := contract().CheckResponse("GET", strings.SplitN(path, "?", 2)[0], res.StatusCode, res.Header, nil); err != nil {
		t.Errorf("answer breaks openapi.json: %v", err)
	}
	s := &stream{res: res, read: make(chan sse, 100)}
	go func() {
		defer close(s.read)
		sc := bufio.NewScanner(res.Body)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "":
				if line == "" {
					if cur != (sse{}) {
						s.read <- cur
					}
					cur = sse{}
				} else {
					cur.comment = value
				}
			case "id":
				cur.id = value
			case "event":
				cur.event = value
			case "data":
				cur.data = value
			}
		}
	}()
	return s
}

// next returns the next event of the stream, skipping comments and the
// retry field; it fails the test when none comes within 30 s, keep-alives
// or not (a stream that sends only keep-alives fails here, not at the
// package's timeout).
func (s *stream) next(t *testing.T) wire.Event {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case m, ok := <-s.read:
			if !ok {
				t.Fatal("the stream ended")
			}
			if m.data == "" {
				continue
			}
			var e wire.Event
			if err := json.Unmarshal([]byte(m.data), &e); err != nil {
				t.Fatal(err)
			}
			if m.id != fmt.Sprint(e.Seq) || m.event != e.Type {
				t.Fatalf("id %q event %q for event %+v", m.id, m.event, e)
			}
			return e
		case <-deadline.C:
			t.Fatal("no event on the stream in 30 s")
		}
	}
}

// TestEventsStream: a stream sends what is stored and then each event as
// it commits, once and in order; one resumed from any Last-Event-ID sees
// every later event once; the admin stream covers every project.
func TestEventsStream(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t)
	for range 3 {
		f.appendEvent(f.alpha, events.ItemCreated)
	}
	s := f.openStream(t, "/v1/projects/alpha/events/stream", f.agent.Token, "")
	for range 4 {
		f.appendEvent(f.beta, events.ItemCreated)
		f.appendEvent(f.alpha, events.AttentionOpened)
	}
	want := f.stored(f.alpha)
	var got []int64
	for range want {
		got = append(got, s.next(t).Seq)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("streamed %v, stored %v", got, want)
	}
	for i, from := range want {
		r := f.openStream(t, "/v1/projects/alpha/events/stream", f.human.Token, fmt.Sprint(from))
		for _, w := range want[i+1:] {
			if e := r.next(t); e.Seq != w {
				t.Fatalf("resumed after %d: got %d, want %d", from, e.Seq, w)
			}
		}
	}
	// The last event stored is the last attention.opened appended.
	last := want[len(want)-1]
	byQuery := f.openStream(t, fmt.Sprintf("/v1/projects/alpha/events/stream?after=%d&types=attention.opened", want[len(want)-2]), f.human.Token, "")
	if e := byQuery.next(t); e.Seq != last || e.Type != events.AttentionOpened {
		t.Fatalf("resumed by ?after=: %+v, want %d", e, last)
	}

	all := f.openStream(t, "/v1/events/stream", adminToken, fmt.Sprint(want[len(want)-1]))
	b := f.appendEvent(f.beta, events.TokenCreated)
	if e := all.next(t); e.Seq != b || e.ProjectID != f.beta.String() {
		t.Fatalf("admin stream: %+v, want %d of beta", e, b)
	}
}

// TestEventsStreamHeartbeat: an idle stream sends comments.
func TestEventsStreamHeartbeat(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t, func(c *server.Config) { c.EventsHeartbeat = 10 * time.Millisecond })
	s := f.openStream(t, "/v1/projects/alpha/events/stream", f.agent.Token, "")
	for {
		m, ok := <-s.read
		if !ok {
			t.Fatal("the stream ended")
		}
		if m.comment != "" {
			return
		}
	}
}

// TestEventsStreamHeartbeatWhileOthersWrite: a stream that has sent
// nothing for a heartbeat sends its comment even while events it does not
// send (another project's, or types its filter leaves out) keep being
// written: the heartbeat counts from the stream's last write, not from
// the log's last change, which on a busy server never lets it come.
func TestEventsStreamHeartbeatWhileOthersWrite(t *testing.T) {
	t.Parallel()
	const beat = 300 * time.Millisecond
	f := eventsSetup(t, func(c *server.Config) { c.EventsHeartbeat = beat })
	for _, tc := range []struct{ name, path string }{
		{"OtherProject", "/v1/projects/alpha/events/stream"},
		{"FilteredOut", "/v1/projects/beta/events/stream?types=attention.opened"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var now wire.EventPage
			f.do("GET", "/v1/events?limit=1000", adminToken, nil).ok(t, 200, &now)
			s := f.openStream(t, tc.path, adminToken, fmt.Sprint(now.NextAfter))
			// beta's items, one every 20 ms: the log changes far more often
			// than once a heartbeat.
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
						f.appendEvent(f.beta, events.ItemCreated)
					}
				}
			}()
			defer func() { close(stop); <-done }()
			timeout := time.After(10 * beat)
			for {
				select {
				case m, ok := <-s.read:
					if !ok {
						t.Fatal("the stream ended")
					}
					if m.data != "" {
						t.Fatalf("sent an event its filter leaves out: %+v", m)
					}
					if m.comment != "" {
						return
					}
				case <-timeout:
					t.Fatalf("no keep-alive in %s with a heartbeat of %s while other events were written", 10*beat, beat)
				}
			}
		})
	}
}

// TestEventsStreamKeepAliveCarriesPosition: a keep-alive names the
// stream's position (an id field, which EventSource and the Go client
// take as the Last-Event-ID to resume from): every event its filter
// selects up to there was sent. A filtered stream resumed from it does not
// read again what it passed, and is not refused 410 events_pruned
// because its last matching event has since aged out of the log.
func TestEventsStreamKeepAliveCarriesPosition(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t, func(c *server.Config) { c.EventsHeartbeat = 100 * time.Millisecond })
	var now wire.EventPage
	f.do("GET", "/v1/events?limit=1000", adminToken, nil).ok(t, 200, &now)
	s := f.openStream(t, "/v1/projects/alpha/events/stream?types=attention.opened", f.human.Token, fmt.Sprint(now.NextAfter))
	var last int64
	for range 3 {
		last = f.appendEvent(f.alpha, events.ItemCreated)
	}
	timeout := time.After(10 * time.Second)
	var pos int64
	for pos < last {
		select {
		case m, ok := <-s.read:
			if !ok {
				t.Fatal("the stream ended")
			}
			if m.data != "" {
				t.Fatalf("sent an event its filter leaves out: %+v", m)
			}
			if m.comment == "" {
				continue
			}
			if m.id == "" {
				t.Fatalf("a keep-alive without the stream's position: %+v", m)
			}
			if _, err := fmt.Sscan(m.id, &pos); err != nil {
				t.Fatalf("keep-alive id %q: %v", m.id, err)
			}
		case <-timeout:
			t.Fatalf("no keep-alive past event %d within 10 s (position %d)", last, pos)
		}
	}
	// Resumed from there, the next matching event comes, once.
	r := f.openStream(t, "/v1/projects/alpha/events/stream?types=attention.opened", f.human.Token, fmt.Sprint(pos))
	want := f.appendEvent(f.alpha, events.AttentionOpened)
	if e := r.next(t); e.Seq != want {
		t.Fatalf("resumed from keep-alive position %d: got %d, want %d", pos, e.Seq, want)
	}
}

// TestEventsStreamEndsOnShutdown: a server shutting down ends its streams
// instead of waiting for them.
func TestEventsStreamEndsOnShutdown(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t)
	s := f.openStream(t, "/v1/projects/alpha/events/stream", f.agent.Token, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a stream open: %v", err)
	}
	for range s.read {
	}
}

// TestEventsStreamEndsOnRevoke: revoking a token ends its open streams:
// no event committed after the revocation reaches them, and an idle one
// ends by its next heartbeat.
func TestEventsStreamEndsOnRevoke(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t, func(c *server.Config) { c.EventsHeartbeat = 50 * time.Millisecond })
	reader := f.mustToken("alpha", "reader", "human")
	busy := f.openStream(t, "/v1/projects/alpha/events/stream", reader.Token, "")
	idle := f.openStream(t, "/v1/projects/alpha/events/stream?types=plan.imported", reader.Token, "")
	f.do("DELETE", "/v1/projects/alpha/tokens/"+reader.ID, adminToken, nil).ok(t, 204, nil)
	after := f.appendEvent(f.alpha, events.ItemCreated)
	for name, s := range map[string]*stream{"busy": busy, "idle": idle} {
		timeout := time.After(10 * time.Second)
	read:
		for {
			select {
			case m, ok := <-s.read:
				if !ok {
					break read
				}
				if m.data == "" {
					continue
				}
				var e wire.Event
				if err := json.Unmarshal([]byte(m.data), &e); err != nil {
					t.Fatal(err)
				}
				if e.Seq >= after {
					t.Fatalf("%s stream: event %d (%s) sent to a token revoked before it was written", name, e.Seq, e.Type)
				}
			case <-timeout:
				t.Fatalf("%s stream: still open 10 s after its token was revoked", name)
			}
		}
	}
}

// TestEventsLongPollRevoked: a long poll whose token is revoked while it
// waits is answered 401, not with the events written after the
// revocation.
func TestEventsLongPollRevoked(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t, func(c *server.Config) { c.MetricsOnMain = true })
	reader := f.mustToken("alpha", "reader", "human")
	var start wire.EventPage
	f.do("GET", "/v1/projects/alpha/events", reader.Token, nil).ok(t, 200, &start)
	horizons := func() string { return f.metric(t, "workgraph_events_horizon_wait_seconds_count") }
	before := horizons()
	got := make(chan resp, 1)
	go func() {
		got <- f.do("GET", fmt.Sprintf("/v1/projects/alpha/events?after=%d&wait_seconds=60", start.NextAfter), reader.Token, nil)
	}()
	// The poll has been let in and read once (a horizon computed) before
	// its token is revoked.
	for deadline := time.Now().Add(30 * time.Second); horizons() == before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the long poll did not read within 30 s")
		}
	}
	f.do("DELETE", "/v1/projects/alpha/tokens/"+reader.ID, adminToken, nil).ok(t, 204, nil)
	f.appendEvent(f.alpha, events.ItemCreated)
	r := <-got
	if r.status != http.StatusUnauthorized {
		t.Fatalf("the long poll of a token revoked while it waited: %d %s", r.status, r.body)
	}
}

// TestEventsStreamDropsStalledReader: a reader that stops reading (its
// connection's buffers full) is dropped once a write has waited two
// heartbeats, instead of holding its stream, goroutine and connection
// for ever.
func TestEventsStreamDropsStalledReader(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t, func(c *server.Config) { c.EventsHeartbeat = 100 * time.Millisecond; c.MetricsOnMain = true })
	streams := func() string { return f.metric(t, "workgraph_event_streams") }
	// A client with a small receive buffer that never reads the answer.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return err
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/projects/alpha/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", f.agent.Token)
	for deadline := time.Now().Add(30 * time.Second); streams() != "1"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream did not open within 30 s")
		}
	}
	// Far more than the connection's buffers hold.
	big := strings.Repeat("x", 4000)
	tx, err := f.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for range 3000 {
		if _, err := events.Append(context.Background(), tx, events.New{Project: f.alpha, Type: events.ItemCreated, Actor: "system",
			Payload: map[string]any{"title": big}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); streams() != "0"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a reader that stopped reading still holds its stream 30 s later")
		}
	}
}

// TestEventsStreamReadOutlastsHeartbeat: a stream sends the events it
// waited for even when reading them takes longer than what is left until
// its next keep-alive, as every read does on a loaded server. The
// heartbeat here, a nanosecond, has passed before any read begins: a
// stream whose reads ended with its wait for the keep-alive would send
// keep-alives only, and never an event.
func TestEventsStreamReadOutlastsHeartbeat(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t, func(c *server.Config) {
		c.EventsHeartbeat = time.Nanosecond
		// The reader reads: two heartbeats would drop it at once.
		c.EventsStall = time.Minute
	})
	stored := f.stored(f.alpha)
	s := f.openStream(t, "/v1/projects/alpha/events/stream", f.agent.Token, fmt.Sprint(stored[len(stored)-1]))
	want := f.appendEvent(f.alpha, events.ItemCreated)
	// Not s.next, whose wait starts again at each keep-alive.
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-s.read:
			if !ok {
				t.Fatal("the stream ended")
			}
			if m.data == "" {
				continue
			}
			if m.id != fmt.Sprint(want) {
				t.Fatalf("sent event %s first, want %d", m.id, want)
			}
			return
		case <-timeout:
			t.Fatal("no event within 10 s on a stream whose every read outlasts its heartbeat")
		}
	}
}

// TestEventsAfterPastTheLog: a position the log has not reached (from a
// database restored from an older backup, or made up) is refused, in the
// poll, the long poll and the stream (named as the client gave it),
// instead of an empty answer and a wait that would skip every event up to
// that number.
func TestEventsAfterPastTheLog(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t)
	last := f.appendEvent(f.alpha, events.ItemCreated)
	past := last + 1_000_000
	for _, q := range []string{"", "&wait_seconds=1"} {
		p := f.do("GET", fmt.Sprintf("/v1/projects/alpha/events?after=%d%s", past, q), f.human.Token, nil).problem(t, 400, "invalid_argument")
		field(t, p, "after")
	}
	p := f.do("GET", fmt.Sprintf("/v1/projects/alpha/events/stream?after=%d", past), f.human.Token, nil).problem(t, 400, "invalid_argument")
	field(t, p, "after")
	req, _ := http.NewRequest("GET", f.url+"/v1/projects/alpha/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+f.human.Token)
	req.Header.Set("Last-Event-ID", fmt.Sprint(past))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 400 || !strings.Contains(string(body), `"field":"Last-Event-ID"`) {
		t.Fatalf("stream with Last-Event-ID past the log: %d %s", res.StatusCode, body)
	}
	// The newest number itself is a position the log reached.
	f.do("GET", fmt.Sprintf("/v1/projects/alpha/events?after=%d", last), f.human.Token, nil).ok(t, 200, nil)
}

// metric is the value of the unlabelled series name on the server's
// /metrics ("" when it is not there).
func (f eventsFixture) metric(t *testing.T, name string) string {
	t.Helper()
	res, err := http.Get(f.srv.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}

// appendAged commits one event of project p stamped age ago (as if written
// then: the retention judges by an event's time).
func (f eventsFixture) appendAged(p uuid.UUID, age time.Duration) int64 {
	f.t.Helper()
	var n int64
	if err := f.pool.QueryRow(context.Background(),
		`INSERT INTO events (project_id, type, at, actor) VALUES ($1, 'item.created', now() - $2::interval, 'system') RETURNING seq`,
		p, fmt.Sprintf("%d seconds", int64(age.Seconds()))).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// TestEventsPruned: a read, long poll or stream resumed after a number
// below its project's retention horizon (the newest event the retention
// deleted in it) is 410 events_pruned naming the horizon, instead of
// silently skipping the deleted events. Event numbers are global, so the
// horizon is the project's: a position below another project's horizon
// only is fine, and so is leaving after out (the oldest kept).
func TestEventsPruned(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// Projects whose first events are old (the retention stops at a
	// project's first event inside the retention, and a token's creation
	// is an event): the tokens come after.
	f := eventsFixture{itemFixture: itemFixture{env: e}}
	f.alpha, f.beta = uuid.MustParse(e.mustProject("alpha").ID), uuid.MustParse(e.mustProject("beta").ID)
	const day = 24 * time.Hour
	a1 := f.appendAged(f.alpha, 40*day)
	a2 := f.appendAged(f.alpha, 40*day)
	b1 := f.appendAged(f.beta, 35*day)
	f.human = e.mustToken("alpha", "ann", "human")
	f.otherHuman = e.mustToken("beta", "bea", "human")
	kept := f.appendEvent(f.alpha, events.ItemCreated)
	// The retention service, as it runs every hour (the server's own may
	// have run first: what counts is that the old events are gone).
	events.NewRetention(f.pool, nil, 30*day, 0, nil).RunOnce(context.Background())
	if n := f.count(`SELECT count(*) FROM events WHERE seq IN ($1, $2, $3)`, a1, a2, b1); n != 0 {
		t.Fatalf("%d of the 3 old events left after the retention ran", n)
	}
	pruned := func(t *testing.T, r resp) {
		t.Helper()
		p := r.problem(t, 410, "events_pruned")
		if got, _ := p["pruned_through"].(float64); int64(got) != a2 {
			t.Fatalf("pruned_through %v, want %d (alpha's newest deleted event)", p["pruned_through"], a2)
		}
		if d, _ := p["detail"].(string); !strings.Contains(d, fmt.Sprint(a2)) {
			t.Fatalf("detail %q does not name %d", d, a2)
		}
	}
	// (after=0 is no position: the oldest kept, below.)
	for _, after := range []int64{a1} {
		for _, q := range []string{"", "&wait_seconds=1", "&types=item.created"} {
			t.Run(fmt.Sprintf("ErrPruned%d%s", after, q), func(t *testing.T) {
				pruned(t, f.do("GET", fmt.Sprintf("/v1/projects/alpha/events?after=%d%s", after, q), f.human.Token, nil))
			})
		}
		for _, h := range [][2]string{{"?after=" + fmt.Sprint(after), ""}, {"", fmt.Sprint(after)}} {
			req, _ := http.NewRequest("GET", f.url+"/v1/projects/alpha/events/stream"+h[0], nil)
			req.Header.Set("Authorization", "Bearer "+f.human.Token)
			if h[1] != "" {
				req.Header.Set("Last-Event-ID", h[1])
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != 410 {
				res.Body.Close() // a stream: its body does not end
				t.Fatalf("stream %q Last-Event-ID %q below the horizon: %d, want 410", h[0], h[1], res.StatusCode)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			pruned(t, resp{status: res.StatusCode, header: res.Header, body: body})
		}
	}
	// The admin's read over every project judges by every project's.
	if got := f.do("GET", fmt.Sprintf("/v1/events?after=%d", a2), adminToken, nil); got.status != 410 {
		t.Fatalf("admin read after %d (below beta's horizon %d): %d %s", a2, b1, got.status, got.body)
	}
	t.Run("OK", func(t *testing.T) {
		// From the horizon on, and from b1 (beta's, above alpha's), nothing
		// of alpha was deleted; without after, the oldest kept.
		for _, q := range []string{"?after=" + fmt.Sprint(a2), "?after=" + fmt.Sprint(b1), ""} {
			var page wire.EventPage
			f.do("GET", "/v1/projects/alpha/events"+q, f.human.Token, nil).ok(t, 200, &page)
			if evs := seqs(page.Events); len(evs) == 0 || evs[len(evs)-1] != kept || evs[0] <= a2 {
				t.Fatalf("%s: events %v, want those after %d, ending with %d", q, evs, a2, kept)
			}
		}
		s := f.openStream(t, "/v1/projects/alpha/events/stream", f.human.Token, fmt.Sprint(a2))
		if e := s.next(t); e.Seq <= a2 {
			t.Fatalf("stream from the horizon: %d, want an event after %d", e.Seq, a2)
		}
		// Beta's horizon is its own: alpha's deletions do not touch it.
		f.do("GET", fmt.Sprintf("/v1/projects/beta/events?after=%d", b1), f.otherHuman.Token, nil).ok(t, 200, nil)
	})
}

// TestEventsStreamUnknownParameters: the stream takes after, types and
// item_id (the admin stream: no item_id); anything else, limit included
// (a read's page size, which a stream does not have), is 400
// invalid_argument naming it, before the stream begins.
func TestEventsStreamUnknownParameters(t *testing.T) {
	t.Parallel()
	f := eventsSetup(t)
	for _, c := range []struct{ path, token, param string }{
		{"/v1/projects/alpha/events/stream?limit=5", f.human.Token, "limit"},
		{"/v1/projects/alpha/events/stream?wait_seconds=5", f.human.Token, "wait_seconds"},
		{"/v1/events/stream?limit=5", adminToken, "limit"},
		{"/v1/events/stream?item_id=" + uuid.NewString(), adminToken, "item_id"},
	} {
		p := f.do("GET", c.path, c.token, nil).problem(t, 400, "invalid_argument")
		field(t, p, c.param)
	}
}
