package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/server/servertest"
	"github.com/workgraph-dev/workgraph/wgerr"
)

const adminToken = "server-test-bootstrap-admin-token"

// start boots the real server on port 0 against a fresh database; tune
// adjusts the config first.
func start(t testing.TB, tune ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.Config{BootstrapToken: adminToken}
	for _, f := range tune {
		f(&cfg)
	}
	return servertest.Start(t, cfg)
}

// syncBuffer collects log output from several goroutines.
type syncBuffer = servertest.SyncBuffer

// TestNoSniff: every answer, JSON, problem, page or probe, tells browsers
// not to guess its type.
func TestNoSniff(t *testing.T) {
	t.Parallel()
	srv := start(t)
	for _, tc := range []struct{ path, token string }{
		{"/healthz", ""},
		{"/readyz", ""},
		{"/v1/openapi.json", ""},
		{"/v1/projects", adminToken},
		{"/v1/projects", ""},      // 401 problem
		{"/v1/no-such-route", ""}, // 404 problem
		{"/signin", ""},           // a page
		{"/no-such-page", ""},     // the UI's 404
		{"/static/no-such-file", ""},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s (status %d): X-Content-Type-Options = %q, want nosniff", tc.path, res.StatusCode, got)
		}
	}
}

// TestStatementTimeout: the server's statements are cancelled by the
// database after Config.StatementTimeout (default 10 s, well below the
// 30 s request timeout), and the cancellation is answered as unavailable;
// migrations are not bound by it.
func TestStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("Default", func(t *testing.T) {
		t.Parallel()
		srv := start(t)
		var got string
		if err := srv.Pool().QueryRow(ctx, "SHOW statement_timeout").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != "10s" {
			t.Fatalf("statement_timeout %q, want 10s", got)
		}
	})
	t.Run("Cancels", func(t *testing.T) {
		t.Parallel()
		srv := start(t, func(c *server.Config) { c.StatementTimeout = 100 * time.Millisecond })
		_, err := srv.Pool().Exec(ctx, "SELECT pg_sleep(5)")
		if err == nil {
			t.Fatal("a 5 s statement was not cancelled")
		}
		if err := db.Translate(err); !errors.Is(err, wgerr.Unavailable) {
			t.Fatalf("a cancelled statement translates to %v, want unavailable", err)
		}
	})
}

// TestSlowBody: a client that trickles its request body is cut once
// Config.BodyReadTimeout has passed, while a long-polling claim, whose body
// arrives at once and whose answer comes late, is not.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	srv := start(t, func(c *server.Config) { c.BodyReadTimeout = 300 * time.Millisecond })
	ctx := context.Background()
	if _, err := srv.Pool().Exec(ctx, "INSERT INTO projects (name) VALUES ('p')"); err != nil {
		t.Fatal(err)
	}

	t.Run("TrickleCut", func(t *testing.T) {
		t.Parallel()
		conn, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /v1/projects/p/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n", adminToken)
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_, _ = io.Copy(io.Discard, conn) // until the server closes
		}()
		// One byte every 50 ms: 20 bytes a second, forever unless cut.
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case <-closed:
				return
			case <-deadline:
				t.Fatal("a connection trickling its body stayed open for 20 s")
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return // cut
				}
			}
		}
	})
	t.Run("LongPollNotCut", func(t *testing.T) {
		t.Parallel()
		body := strings.NewReader(`{"worker":"w","wait_seconds":1}`)
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/projects/p/claims", body)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("a long poll longer than the body timeout: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("a long poll with nothing to claim: status %d, want 204", res.StatusCode)
		}
	})
}

// browser is a client with a cookie jar that does not follow redirects,
// as a person's browser on the server's pages.
type browser struct {
	t   *testing.T
	srv *server.Server
	*http.Client
}

func newBrowser(t *testing.T, srv *server.Server) browser {
	jar, _ := cookiejar.New(nil)
	return browser{t: t, srv: srv, Client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn fills the sign-in form with token (its CSRF field from the form
// page) and returns the status of the answer: 303 when signed in.
func (b browser) signIn(token string) int {
	b.t.Helper()
	res, err := b.Get(b.srv.URL() + "/signin")
	if err != nil {
		b.t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfField.FindSubmatch(page)
	if m == nil {
		b.t.Fatal("no CSRF token on the sign-in form")
	}
	res, err = b.PostForm(b.srv.URL()+"/signin", url.Values{"csrf": {string(m[1])}, "token": {token}, "next": {"/"}})
	if err != nil {
		b.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestUnauthenticatedThrottle: requests without valid credentials and
// failed sign-ins spend one bucket per client address; once it is empty,
// the address's requests are refused with 429 and Retry-After before any
// token is read, and the refusals are summarised in the log, not logged one
// by one at info.
func TestUnauthenticatedThrottle(t *testing.T) {
	t.Parallel()
	const burst = 5
	logs := &syncBuffer{}
	srv := start(t, func(c *server.Config) {
		c.UnauthenticatedRate, c.UnauthenticatedBurst = 0.001, burst // no refill within the test
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	get := func(path, token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for i := range burst {
		if res := get("/v1/projects", "wg_guess_"+strconv.Itoa(i)); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d: status %d, want 401", i, res.StatusCode)
		}
	}
	for _, token := range []string{"wg_guess_more", "", adminToken} {
		res := get("/v1/projects", token)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Fatalf("after %d failures (token %q): status %d, Retry-After %q; want 429 with Retry-After",
				burst, token, res.StatusCode, res.Header.Get("Retry-After"))
		}
	}
	// The sign-in form shares the bucket.
	if st := newBrowser(t, srv).signIn(adminToken); st != http.StatusTooManyRequests {
		t.Fatalf("a sign-in from a throttled address: status %d, want 429", st)
	}
	// Routes that need no credentials are not throttled.
	for _, path := range []string{"/healthz", "/v1/openapi.json"} {
		if res := get(path, ""); res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s from a throttled address: status %d, want 200", path, res.StatusCode)
		}
	}
	out := logs.String()
	if n := strings.Count(out, `"status":401`) + strings.Count(out, `"status":429`); n > 0 {
		t.Errorf("%d refused requests logged one by one at info:\n%s", n, out)
	}
	if n := strings.Count(out, "requests without valid credentials"); n != 1 {
		t.Errorf("%d summary lines, want 1 (the first failure; then one a minute):\n%s", n, out)
	}
}

// TestFailedSignins: failed sign-ins alone exhaust the address's bucket.
func TestFailedSignins(t *testing.T) {
	t.Parallel()
	const burst = 3
	srv := start(t, func(c *server.Config) { c.UnauthenticatedRate, c.UnauthenticatedBurst = 0.001, burst })
	signin := newBrowser(t, srv).signIn
	for i := range burst {
		if st := signin("wg_wrong_" + strconv.Itoa(i)); st != http.StatusUnauthorized {
			t.Fatalf("failed sign-in %d: status %d, want 401", i, st)
		}
	}
	if st := signin(adminToken); st != http.StatusTooManyRequests {
		t.Fatalf("a sign-in after %d failures: status %d, want 429", burst, st)
	}
}

// TestHead: HEAD is answered as GET without a body, with GET's status and
// headers (probes and link checkers send HEAD); a method no route has is
// still refused.
func TestHead(t *testing.T) {
	t.Parallel()
	srv := start(t)
	for _, tc := range []struct {
		path, token, ctype string
		status             int
	}{
		{"/healthz", "", "application/json", http.StatusOK},
		{"/readyz", "", "application/json", http.StatusOK},
		{"/v1/openapi.json", "", "application/json", http.StatusOK},
		{"/v1/projects", adminToken, "application/json", http.StatusOK},
		{"/v1/projects", "", "application/problem+json", http.StatusUnauthorized},
		{"/signin", "", "text/html", http.StatusOK},
		{"/static/app.css", "", "text/css", http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodHead, srv.URL()+tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.ctype) || len(body) != 0 {
			t.Errorf("HEAD %s: status %d, Content-Type %q, %d body bytes; want %d, %s, none",
				tc.path, res.StatusCode, res.Header.Get("Content-Type"), len(body), tc.status, tc.ctype)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, srv.URL()+"/healthz", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed && res.StatusCode != http.StatusNotFound {
		t.Errorf("PUT /healthz: status %d, want 405 or 404", res.StatusCode)
	}
}

// TestThrottleIgnoresForwardedHeaders: a client cannot leave its empty
// bucket by naming another address in X-Forwarded-For, X-Real-Ip or
// Forwarded: the throttle counts the connection's peer only (there is no
// trusted-proxy setting, so no header is ever believed).
func TestThrottleIgnoresForwardedHeaders(t *testing.T) {
	t.Parallel()
	const burst = 3
	srv := start(t, func(c *server.Config) { c.UnauthenticatedRate, c.UnauthenticatedBurst = 0.001, burst })
	for i := range burst + 3 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/v1/projects", nil)
		req.Header.Set("Authorization", "Bearer wg_guess_"+strconv.Itoa(i))
		addr := "203.0.113." + strconv.Itoa(i+1)
		req.Header.Set("X-Forwarded-For", addr)
		req.Header.Set("X-Real-Ip", addr)
		req.Header.Set("Forwarded", "for="+addr)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusTooManyRequests}[i < burst]; res.StatusCode != want {
			t.Fatalf("guess %d claiming to come from %s: status %d, want %d", i, addr, res.StatusCode, want)
		}
	}
}
