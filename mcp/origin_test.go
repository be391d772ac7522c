package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTTPOrigin: the streamable HTTP transport refuses requests a browser
// sends from a foreign page (the MCP specification's defence against DNS
// rebinding), and serves clients that send no Origin, loopback pages and
// the configured origins.
func TestHTTPOrigin(t *testing.T) {
	t.Parallel()
	e := setup(t)
	s := e.mcpServer(t, Config{AllowedOrigins: []string{"https://app.example"}})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	tests := map[string]struct {
		origin string
		want   int
	}{
		"Absent":         {"", http.StatusOK},
		"Loopback":       {"http://127.0.0.1:5173", http.StatusOK},
		"Localhost":      {"http://localhost:3000", http.StatusOK},
		"LoopbackV6":     {"http://[::1]:8080", http.StatusOK},
		"Configured":     {"https://app.example", http.StatusOK},
		"Foreign":        {"http://evil.example", http.StatusForbidden},
		"ForeignPort":    {"https://app.example:8443", http.StatusForbidden},
		"SameServer":     {"http://" + strings.TrimPrefix(hs.URL, "http://"), http.StatusOK},
		"RebindingName":  {"http://attacker.example:" + hs.URL[strings.LastIndex(hs.URL, ":")+1:], http.StatusForbidden},
		"Null":           {"null", http.StatusForbidden},
		"Garbage":        {"::not a url", http.StatusForbidden},
		"LocalhostLike":  {"http://localhost.evil.example", http.StatusForbidden},
		"LoopbackInPath": {"http://evil.example/127.0.0.1", http.StatusForbidden},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.want {
				t.Errorf("Origin %q: status %d, want %d", tc.origin, res.StatusCode, tc.want)
			}
		})
	}
}
