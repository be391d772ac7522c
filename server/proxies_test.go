package server_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
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
