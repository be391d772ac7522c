package web_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/server/servertest"
	"github.com/workgraph-dev/workgraph/web"
)

// TestPageStreamEndsWithSession: a page's event stream ends when its
// session does (the token revoked, or signed out): nothing written after
// that is sent on it.
func TestPageStreamEndsWithSession(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"Revoked", "SignedOut"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			e := setup(t, live)
			tok, bearer, err := e.auth.Create(context.Background(), &e.project.ID, "watcher", "human")
			if err != nil {
				t.Fatal(err)
			}
			b := e.signIn(bearer)
			lines := b.openStream(t, "/p/acme/events/stream")
			if end == "Revoked" {
				if _, err := e.auth.Revoke(context.Background(), e.project.ID, tok.ID); err != nil {
					t.Fatal(err)
				}
			} else {
				wantStatus(t, b.post("/signout", nil), http.StatusSeeOther)
			}
			e.mustItem("after the session")
			timeout := time.After(10 * time.Second)
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						return
					}
					if strings.HasPrefix(l, "event:") {
						t.Fatalf("sent %q after the session ended", l)
					}
				case <-timeout:
					t.Fatal("the stream is still open 10 s after its session ended")
				}
			}
		})
	}
}

// TestPageStreamHeartbeatAndStall: a page's stream sends its keep-alive
// comments as often as the server's events heartbeat says (proxies with
// a shorter idle timeout keep it open), and a reader that stops reading
// is dropped once a write has waited two heartbeats (the stream then
// ends when it reads again, instead of going on).
//
// Each subtest's stream is open only during that subtest, and it has been
// answered (its horizon read) before the subtest writes events: a stream
// left open and unread by an earlier subtest would also be dropped, and
// a stream that began after the events would have nothing to stall on.
//
// The streams are served with small send buffers (and Stall's client
// reads with a small receive buffer), so that a few kilobytes fill the
// connection: how soon the stall comes then depends on the stream's
// writes, not on how many megabytes the kernel's buffer autotuning
// allows on loopback, and how fast a loaded machine produces them.
func TestPageStreamHeartbeatAndStall(t *testing.T) {
	t.Parallel()
	log := &logWatch{want: "page event stream dropped: its reader stopped reading", seen: make(chan struct{})}
	e := setup(t, live, func(d *web.Deps) {
		d.EventsHeartbeat = 100 * time.Millisecond
		d.Logger = slog.New(slog.NewTextHandler(log, nil))
	})
	b := e.signIn(e.human)
	var cookies []string
	for _, c := range b.c.Jar.Cookies(mustURL(t, e.srv.URL)) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	srv := httptest.NewUnstartedServer(e.srv.Config.Handler)
	srv.Listener = sendBufferListener{srv.Listener, 4096}
	srv.Start()
	t.Cleanup(srv.Close)
	u := mustURL(t, srv.URL)
	// open opens the stream for the length of t and returns it once the
	// server has answered (the response's head and the retry field read):
	// the stream's horizon is then read, so events written after open
	// returns are sent on it.
	open := func(t *testing.T, rcvbuf int) (net.Conn, *bufio.Reader) {
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var err error
			if rcvbuf > 0 {
				c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf) })
			}
			return err
		}}
		conn, err := d.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "GET /p/acme/events/stream HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\n\r\n", u.Host, strings.Join(cookies, "; "))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream did not open within 10 s: %v", err)
			}
			if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 200 ") {
				t.Fatalf("stream: %q", line)
			}
			if strings.Contains(line, "retry: 2000") {
				return conn, r
			}
		}
	}
	t.Run("Heartbeat", func(t *testing.T) {
		conn, r := open(t, 0)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("no keep-alive within 10 s with a heartbeat of 100 ms: %v", err)
			}
			if strings.Contains(line, ": keep-alive") {
				return
			}
		}
	})
	// Another project's events, one every 20 ms, wake the stream far
	// more often than its heartbeat without giving it anything to send:
	// its keep-alive still comes, a heartbeat after its last write.
	t.Run("HeartbeatWhileOthersWrite", func(t *testing.T) {
		conn, r := open(t, 0)
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					if _, err := e.pool.Exec(context.Background(), `INSERT INTO events (project_id, type, at, actor, payload)
						VALUES (gen_random_uuid(), 'item.created', clock_timestamp(), 'system', '{}')`); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
		defer func() { close(stop); <-done }()
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("no keep-alive within 2 s with a heartbeat of 100 ms while another project's events were written: %v", err)
			}
			if strings.HasPrefix(line, "event:") {
				t.Fatalf("sent another project's event: %q", line)
			}
			if strings.Contains(line, ": keep-alive") {
				return
			}
		}
	})
	t.Run("Stall", func(t *testing.T) {
		conn, r := open(t, 4096)
		// Far more than the connection's buffers hold (about 500 KB of
		// the stream's writes against tens of KB), written at once.
		if _, err := e.pool.Exec(context.Background(), `INSERT INTO events (project_id, type, at, actor, payload)
			SELECT $1, 'item.created', clock_timestamp(), 'system', '{}' FROM generate_series(1, 5000)`, e.project.ID); err != nil {
			t.Fatal(err)
		}
		// The server fills the connection, waits two heartbeats on it and
		// says it dropped the reader (a stream held for ever never does).
		select {
		case <-log.seen:
		case <-time.After(30 * time.Second):
			t.Fatalf("the stream of a reader that stopped reading was not dropped within 30 s; log:\n%s", log.String())
		}
		// Read again: the dropped stream ends.
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatalf("the stream of a reader that stopped reading was not dropped: %v", err)
		}
	})
}

// TestPageStreamReadOutlastsHeartbeat: a page's stream sends the events
// it waited for even when reading them takes longer than what is left
// until its next keep-alive, as every read does on a loaded server. The
// heartbeat here, a nanosecond, has passed before any read begins: a
// stream whose reads ended with its wait for the keep-alive would send
// keep-alives only, and never an event.
func TestPageStreamReadOutlastsHeartbeat(t *testing.T) {
	t.Parallel()
	e := setup(t, live, func(d *web.Deps) {
		d.EventsHeartbeat = time.Nanosecond
		// The reader reads: two heartbeats would drop it at once.
		d.EventsStall = time.Minute
	})
	lines := e.signIn(e.human).openStream(t, "/p/acme/events/stream")
	e.mustItem("read however long it takes")
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			if l == "event: item.created" {
				return
			}
		case <-timeout:
			t.Fatal("no event within 10 s on a stream whose every read outlasts its heartbeat")
		}
	}
}

// sendBufferListener accepts connections whose send buffer is bytes
// (SO_SNDBUF, which also turns off its autotuning).
type sendBufferListener struct {
	net.Listener
	bytes int
}

// Accept accepts a connection and sets its send buffer.
func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := c.(*net.TCPConn).SetWriteBuffer(l.bytes); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestAllEventStreamAdminsOnly: the stream of every project's events
// (what an admin's all-projects inbox follows) is not found for a person
// of one project (agents do not sign in).
func TestAllEventStreamAdminsOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, live)
	wantStatus(t, e.signIn(e.human).get("/events/stream"), http.StatusNotFound)
}

// TestAllEventStreamAttentionOnly: the all-projects stream carries the
// attention events only (what changes an inbox), not the rest of the
// fleet's work.
func TestAllEventStreamAttentionOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, live)
	b := e.signIn(e.admin)
	lines := b.openStream(t, "/events/stream")
	e.mustItem("a task")
	e.claimAndAsk("w1", attention.NewRequest{Question: "Which way?", Blocking: true})
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			if !strings.HasPrefix(l, "event:") {
				continue
			}
			if l != "event: attention.opened" {
				t.Fatalf("the all-projects stream sent %q before the question", l)
			}
			return
		case <-timeout:
			t.Fatal("no attention.opened within 10 s")
		}
	}
}

// openStream opens the page event stream at path as b and returns its
// lines, from after the stream's opening (the retry field and its blank
// line); header is pairs of a request header's name and value; the
// stream is closed at the test's end.
func (b *browser) openStream(t *testing.T, path string, header ...string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.e.srv.URL+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := b.c.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		t.Fatalf("stream %s: %d", path, res.StatusCode)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for l := range lines { // the retry field, then the blank line
		if l == "" {
			break
		}
	}
	return lines
}

// logWatch is a log's output that closes seen when a line containing
// want is written, so that a test waits for what the server says instead
// of polling its log.
type logWatch struct {
	want string
	seen chan struct{}
	once sync.Once
	buf  servertest.SyncBuffer
}

// Write appends p to the log and closes seen if p contains want.
func (l *logWatch) Write(p []byte) (int, error) {
	if strings.Contains(string(p), l.want) {
		l.once.Do(func() { close(l.seen) })
	}
	return l.buf.Write(p)
}

// String returns everything logged so far.
func (l *logWatch) String() string { return l.buf.String() }

// TestPageStreamResumes: a page's stream opened with ?after= (a page that
// showed the log up to an event), or reconnected with Last-Event-ID (which
// wins over ?after=, as on the API's streams), sends the events after that
// number first, then the later ones; its keep-alives carry its position;
// a number that is not one, or past the log, is 400.
func TestPageStreamResumes(t *testing.T) {
	t.Parallel()
	e := setup(t, live, func(d *web.Deps) { d.EventsHeartbeat = 100 * time.Millisecond })
	_, bearer, err := e.auth.Create(context.Background(), &e.project.ID, "watcher", "human")
	if err != nil {
		t.Fatal(err)
	}
	b := e.signIn(bearer)
	for _, title := range []string{"one", "two", "three"} {
		e.mustItem(title)
	}
	var created []int64
	rows, err := e.pool.Query(context.Background(),
		`SELECT seq FROM events WHERE project_id = $1 AND type = 'item.created' ORDER BY seq`, e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		created = append(created, n)
	}
	if rows.Err() != nil || len(created) != 3 {
		t.Fatalf("item.created events %v, %v", created, rows.Err())
	}
	// ids reads the stream's event ids until it has n of them.
	ids := func(t *testing.T, lines <-chan string, n int) []string {
		t.Helper()
		var out []string
		timeout := time.After(10 * time.Second)
		for len(out) < n {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended after %v", out)
				}
				if strings.HasPrefix(l, "event: ") {
					continue
				}
				if id, ok := strings.CutPrefix(l, "id: "); ok {
					// A keep-alive's id is not an event's: the next
					// line tells.
					if next := <-lines; strings.HasPrefix(next, "event: ") {
						out = append(out, id)
					}
				}
			case <-timeout:
				t.Fatalf("%d events of %d within 10 s: %v", len(out), n, out)
			}
		}
		return out
	}
	seq := func(n int64) string { return fmt.Sprint(n) }

	t.Run("After", func(t *testing.T) {
		lines := b.openStream(t, fmt.Sprintf("/p/acme/events/stream?after=%d", created[0]))
		if got := ids(t, lines, 2); got[0] != seq(created[1]) || got[1] != seq(created[2]) {
			t.Fatalf("stream after %d sent %v first, want %d and %d", created[0], got, created[1], created[2])
		}
	})
	t.Run("LastEventID", func(t *testing.T) {
		lines := b.openStream(t, fmt.Sprintf("/p/acme/events/stream?after=%d", created[0]), "Last-Event-ID", seq(created[1]))
		if got := ids(t, lines, 1); got[0] != seq(created[2]) {
			t.Fatalf("stream resumed after %d sent %v first, want %d", created[1], got, created[2])
		}
	})
	t.Run("KeepAliveCarriesPosition", func(t *testing.T) {
		lines := b.openStream(t, fmt.Sprintf("/p/acme/events/stream?after=%d", created[2]))
		timeout := time.After(10 * time.Second)
		for prev := ""; ; {
			select {
			case l := <-lines:
				if l == ": keep-alive" {
					id, ok := strings.CutPrefix(prev, "id: ")
					if n, err := strconv.ParseInt(id, 10, 64); !ok || err != nil || n < created[2] {
						t.Fatalf("keep-alive after %q, want the stream's position (id >= %d)", prev, created[2])
					}
					return
				}
				prev = l
			case <-timeout:
				t.Fatal("no keep-alive within 10 s")
			}
		}
	})
	t.Run("ErrBadAfter", func(t *testing.T) {
		// status is the status of the answer, its body left unread (a
		// stream's never ends).
		status := func(q string, header ...string) int {
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/p/acme/events/stream"+q, nil)
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			res, err := b.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
		for _, q := range []string{"?after=x", "?after=-1", fmt.Sprintf("?after=%d", created[2]+1_000_000)} {
			if got := status(q); got != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400", q, got)
			}
		}
		if got := status("", "Last-Event-ID", seq(created[2]+1_000_000)); got != http.StatusBadRequest {
			t.Errorf("Last-Event-ID past the log: status %d, want 400", got)
		}
	})
}
