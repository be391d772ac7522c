package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/wgerr"
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
