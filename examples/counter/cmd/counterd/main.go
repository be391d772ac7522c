// Command counterd runs the example counter destination (package counter).
//
//	COUNTER_DATABASE_URL       its own PostgreSQL database (required)
//	WORKGRAPH_FENCE_KEYS_URL   the workgraph server's keys document, e.g.
//	                           http://127.0.0.1:8080/.well-known/workgraph-fence-keys
//	COUNTER_PROJECT_ID         the workgraph project id it serves ("" any)
//	COUNTER_ADDR               where to listen [127.0.0.1:8090]; port 0 picks one
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/examples/counter"
	"github.com/workgraph-dev/workgraph/fence"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("counterd", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("COUNTER_DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := counter.Migrate(ctx, pool); err != nil {
		return err
	}
	url := os.Getenv(fence.EnvKeysURL)
	if url == "" {
		return fmt.Errorf("%s is required", fence.EnvKeysURL)
	}
	// The keys are fetched now (a server that does not answer stops the
	// start), then followed: a key the server rotates to is fetched when a
	// token first names it.
	ks := &fence.KeySet{URL: url}
	keys, err := ks.Keys(ctx)
	if err != nil {
		return err
	}
	svc, err := counter.New(pool, keys, os.Getenv("COUNTER_PROJECT_ID"), log)
	if err != nil {
		return err
	}
	svc.FollowKeys(ks)
	addr := os.Getenv("COUNTER_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8090"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The bound address (port 0 picks one): a test reads it from here.
	log.Info("counterd listening", "addr", ln.Addr().String())
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}
