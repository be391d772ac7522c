package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/server"
)

// clientFrom is an HTTP client whose connections come from the local
// address ip (any 127/8 address reaches the test server on 127.0.0.1).
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestThrottleTrustedProxy: behind a trusted proxy (here the test's
// connections from 127.0.0.1) each client the proxy names in
// X-Forwarded-For has a bucket of failed authentications of its own, and
// the request log names that client; an address a client prepends to the
// header does not move it to another bucket; a peer that is not a trusted
// proxy (127.0.0.2) is never believed, whatever it forwards. Before the
// setting, every client behind a proxy shared the proxy's one bucket.
func TestThrottleTrustedProxy(t *testing.T) {
	t.Parallel()
	const burst = 3
	proxies, err := auth.ParseProxies("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	srv := start(t, func(c *server.Config) {
		c.UnauthenticatedRate, c.UnauthenticatedBurst = 0.001, burst
		c.TrustedProxies = proxies
		c.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	proxy, untrusted := clientFrom(t, "127.0.0.1"), clientFrom(t, "127.0.0.2")
	guess := func(t *testing.T, via *http.Client, xff string, want int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/v1/projects", nil)
		req.Header.Set("Authorization", "Bearer wg_guess")
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		res, err := via.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("a guess forwarded for %q: status %d, want %d", xff, res.StatusCode, want)
		}
	}
	for range burst {
		guess(t, proxy, "203.0.113.1", http.StatusUnauthorized)
	}
	guess(t, proxy, "203.0.113.1", http.StatusTooManyRequests)
	// The client cannot leave its bucket by naming another address left
	// of the one the proxy appended.
	guess(t, proxy, "203.0.113.2, 203.0.113.1", http.StatusTooManyRequests)
	// Another client behind the same proxy has a bucket of its own, and
	// so has the proxy itself.
	guess(t, proxy, "203.0.113.2", http.StatusUnauthorized)
	guess(t, proxy, "", http.StatusUnauthorized)

	// A peer that is no trusted proxy is its own address, whatever
	// address it forwards: it empties its one bucket.
	for i := range burst {
		guess(t, untrusted, "203.0.113."+strconv.Itoa(50+i), http.StatusUnauthorized)
	}
	guess(t, untrusted, "203.0.113.60", http.StatusTooManyRequests)
	guess(t, proxy, "203.0.113.3", http.StatusUnauthorized)

	lines := log.String()
	for _, want := range []string{"client=203.0.113.1 ", "client=203.0.113.2 ", "client=127.0.0.1 ", "client=127.0.0.2 ", "client=203.0.113.3 "} {
		if !strings.Contains(lines, want) {
			t.Errorf("no request line names %s:\n%s", want, lines)
		}
	}
	for _, forged := range []string{"client=203.0.113.50", "client=203.0.113.60"} {
		if strings.Contains(lines, forged) {
			t.Errorf("a request line believed an untrusted peer's header (%s):\n%s", forged, lines)
		}
	}
}

// TestSecureCookieTrustedProxy: the sign-in form's and the session's
// cookies are Secure when a trusted proxy (the test's connections from
// 127.0.0.1) says X-Forwarded-Proto: https, and not when a peer that is no
// trusted proxy (127.0.0.2) says it over plain http: its header is not
// believed, and the cookies follow the connection's own TLS state. Before,
// anyone's header made them Secure.
func TestSecureCookieTrustedProxy(t *testing.T) {
	t.Parallel()
	proxies, err := auth.ParseProxies("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, func(c *server.Config) { c.TrustedProxies = proxies })
	for _, tc := range []struct {
		name, from string
		secure     bool
	}{
		{name: "TrustedProxy", from: "127.0.0.1", secure: true},
		{name: "UntrustedPeer", from: "127.0.0.2", secure: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clientFrom(t, tc.from)
			c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			form := secureCookieRequest(t, c, http.MethodGet, srv.URL()+"/signin", nil)
			signinCookie := cookieNamed(t, form, "wg_signin")
			if signinCookie.Secure != tc.secure {
				t.Fatalf("sign-in form's cookie from %s with X-Forwarded-Proto https: Secure %v, want %v", tc.from, signinCookie.Secure, tc.secure)
			}
			m := csrfField.FindSubmatch(form.body)
			if m == nil {
				t.Fatal("no CSRF token on the sign-in form")
			}
			body := url.Values{"csrf": {string(m[1])}, "token": {adminToken}, "next": {"/"}}.Encode()
			res := secureCookieRequest(t, c, http.MethodPost, srv.URL()+"/signin", strings.NewReader(body),
				"Cookie", signinCookie.Name+"="+signinCookie.Value, "Content-Type", "application/x-www-form-urlencoded")
			if res.StatusCode != http.StatusSeeOther {
				t.Fatalf("sign in from %s: status %d, want 303", tc.from, res.StatusCode)
			}
			if session := cookieNamed(t, res, "wg_session"); session.Secure != tc.secure {
				t.Fatalf("session cookie from %s with X-Forwarded-Proto https: Secure %v, want %v", tc.from, session.Secure, tc.secure)
			}
		})
	}
}

// secureCookieAnswer is an answer and its body.
type secureCookieAnswer struct {
	*http.Response
	body []byte
}

// secureCookieRequest sends a request that says X-Forwarded-Proto: https
// over plain http, with the extra headers given as name, value pairs.
func secureCookieRequest(t *testing.T, c *http.Client, method, u string, body io.Reader, header ...string) secureCookieAnswer {
	t.Helper()
	req, _ := http.NewRequest(method, u, body)
	req.Header.Set("X-Forwarded-Proto", "https")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return secureCookieAnswer{res, b}
}

// cookieNamed is the cookie the answer sets under name.
func cookieNamed(t *testing.T, res secureCookieAnswer, name string) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("%s %s: no %s cookie set", res.Request.Method, res.Request.URL.Path, name)
	return nil
}
