package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/server"
)

// TestHeaderTooLarge: a request whose request line and headers exceed
// server.MaxHeaderBytes is refused 431 in the project's words: on the API
// as problem+json with the code header_too_large, on the web UI as its
// error page; one within the bound is served. (net/http's own bound, past
// which it answers 431 as text/plain before any handler, is 128 KiB past
// it: docs/operations.md.)
func TestHeaderTooLarge(t *testing.T) {
	t.Parallel()
	srv := start(t)
	get := func(t *testing.T, path string, padding int) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+path, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("X-Padding", strings.Repeat("a", padding))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, body
	}
	t.Run("OK", func(t *testing.T) {
		if res, body := get(t, "/v1/projects", server.MaxHeaderBytes-1024); res.StatusCode != http.StatusOK {
			t.Fatalf("headers just within the bound: %d %s", res.StatusCode, body)
		}
	})
	t.Run("ErrAPI", func(t *testing.T) {
		// Just past the bound, and well past it (where net/http answered
		// text/plain when the bound was its own).
		for _, padding := range []int{server.MaxHeaderBytes + 1, server.MaxHeaderBytes + 64<<10} {
			res, body := get(t, "/v1/projects", padding)
			var p struct {
				Code   string `json:"code"`
				Status int    `json:"status"`
			}
			if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge || res.Header.Get("Content-Type") != "application/problem+json" ||
				json.Unmarshal(body, &p) != nil || p.Code != "header_too_large" || p.Status != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("headers %d bytes past the bound: %d %q %.300s, want 431 problem+json header_too_large",
					padding-server.MaxHeaderBytes, res.StatusCode, res.Header.Get("Content-Type"), body)
			}
		}
	})
	t.Run("ErrBeyondTransport", func(t *testing.T) {
		// Past net/http's own bound the request never reaches a handler:
		// still 431, in net/http's words.
		if res, _ := get(t, "/v1/projects", 2<<20); res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("headers of 2 MiB: %d, want 431", res.StatusCode)
		}
	})
	t.Run("ErrWeb", func(t *testing.T) {
		res, body := get(t, "/signin", server.MaxHeaderBytes+1)
		if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("a page's headers past the bound: %d %q %.200s, want a 431 page", res.StatusCode, res.Header.Get("Content-Type"), body)
		}
	})
}
