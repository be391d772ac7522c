// Package servertest starts the real workgraph server for tests of other
// packages (the API, the CLI, the MCP server, the Go client): on port 0,
// against a fresh database of the test's own from db/dbtest, stopped when
// the test ends. It is for tests only; the server a test gets is the one
// `workgraph serve` runs (server.Start), nothing stubbed.
package servertest

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
)

// TestMaxConns is the pool size of a test server that names none.
const TestMaxConns = 8

// Start boots the server with cfg, waits until its long-poll notifier
// listens (Server.Listening), and shuts it down when the test ends.
// Empty fields get test defaults: DatabaseURL a fresh migrated database
// (dbtest.URL), Addr 127.0.0.1:0, Logger one that discards. Every other
// field is used as given (RateLimit 0 is the server's default limit; a test
// that sends many requests sets it to -1).
func Start(tb testing.TB, cfg server.Config) *server.Server {
	tb.Helper()
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = dbtest.URL(tb)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxConns == 0 {
		// A test server needs few connections, and a test binary runs
		// several servers at once beside other binaries: the production
		// default (db.DefaultMaxConns) of each could exhaust a shared
		// server's max_connections (100 on Debian's PostgreSQL).
		cfg.MaxConns = TestMaxConns
	}
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("server.Start: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	// The server serves before its notifier listens; until it does, a
	// waiting claim gets one claim more (at the first LISTEN) than once
	// it listens. Tests start from the steady state, whatever the load.
	select {
	case <-srv.Listening():
	case <-time.After(time.Minute):
		tb.Fatal("servertest: the server's long-poll notifier did not LISTEN within a minute")
	}
	return srv
}

// SyncBuffer is a bytes.Buffer that several goroutines may write while the
// test reads it: a server's log, a command's output.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
