package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/workgraph-dev/workgraph/internal/pgbouncer"
	"github.com/workgraph-dev/workgraph/server"
)

// pooledServer returns the run's second in-process server, whose main
// database URL goes through a PgBouncer of the bench's own in transaction
// mode (server pool -pool, the same number of PostgreSQL connections as
// the direct server) and whose listen URL is direct, as docs/operations.md
// tells operators to run it. It starts both on first use. The error wraps
// pgbouncer.ErrNotInstalled when pgbouncer is absent.
func (e *env) pooledServer(ctx context.Context) (*benchServer, error) {
	if e.pooledSrv != nil {
		return e.pooledSrv, nil
	}
	b, err := pgbouncer.Start(pgbouncer.Config{
		Backend: e.url, PoolSize: e.cfg.Pool,
	})
	if err != nil {
		return nil, err
	}
	e.closer = append(e.closer, b.Stop)
	logPath := filepath.Join(os.TempDir(), "workgraph-bench-server-pgbouncer.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	tok := randomToken()
	s, err := server.Start(ctx, server.Config{
		DatabaseURL:       withPoolSize(b.URL, e.cfg.Pool),
		ListenDatabaseURL: e.url,
		Addr:              "127.0.0.1:0",
		BootstrapToken:    tok,
		Logger:            slog.New(slog.NewTextHandler(logFile, nil)),
		RateLimit:         -1,
		// It serves workload 2's lifecycle only: without Off its webhook
		// deliverer, running on through the later workloads, would take
		// workload 10's deliveries (and refuse their loopback receivers).
		Webhooks: server.WebhooksConfig{Off: true},
	})
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start server behind PgBouncer (log %s): %w", logPath, err)
	}
	bs, err := newBenchServer(s.URL(), tok)
	if err != nil {
		return nil, err
	}
	bs.stop = func() {
		s.Shutdown(context.Background())
		logFile.Close()
	}
	e.pooledSrv = bs
	e.closer = append(e.closer, bs.stop)
	e.logf("  in-process server behind PgBouncer %s (transaction mode, %d server connections) at %s (log %s)",
		b.Socket, e.cfg.Pool, s.URL(), logPath)
	return bs, nil
}

// pooledVariant returns workload 2's "rest-pgbouncer" variant at n agents
// (the Go client, as "rest", against pooledServer), or ok false with the
// reason recorded in the report when pgbouncer is not installed.
func (e *env) pooledVariant(ctx context.Context, n int, watch func(load func(ctx context.Context, k int) error) (*backlog, error)) (v variant, ok bool, err error) {
	s, err := e.pooledServer(ctx)
	if errors.Is(err, pgbouncer.ErrNotInstalled) {
		msg := fmt.Sprintf("workload 2 rest-pgbouncer: %v", err)
		if !e.pooledSkipped {
			e.logf("  -pgbouncer: %v; the pooled variant is not measured", err)
			e.rep.Skipped = append(e.rep.Skipped, msg)
			e.pooledSkipped = true
		}
		return variant{}, false, nil
	}
	if err != nil {
		return variant{}, false, err
	}
	project, err := s.restProject(ctx, e.newProjectName("w2pgb"))
	if err != nil {
		return variant{}, false, err
	}
	agents, err := s.restAgents(ctx, project, n, false)
	if err != nil {
		return variant{}, false, err
	}
	b, err := watch(func(ctx context.Context, k int) error { return loadReady(ctx, e.pool, project, k, 0) })
	if err != nil {
		return variant{}, false, err
	}
	return lifecycleVariant(2, "rest-pgbouncer", agents, true, b), true, nil
}
