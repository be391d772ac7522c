package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
)

const adminToken = "server-test-bootstrap-admin-token"

// start boots the real server on port 0 against a fresh database; tune
// adjusts the config first.
func start(t *testing.T, tune ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.Config{
		DatabaseURL:    dbtest.URL(t),
		Addr:           "127.0.0.1:0",
		BootstrapToken: adminToken,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, f := range tune {
		f(&cfg)
	}
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("server.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv
}

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
