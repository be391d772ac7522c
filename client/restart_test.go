package client_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/embedpg"
)

// TestWorkerRidesOutPostgresRestart: PostgreSQL itself stops and starts
// again (a private cluster of this test's own, on a unix socket in its
// temporary directory) while a worker holds a lease; the worker's
// heartbeat and completion, sent while it is down, are answered 503,
// retried, and succeed once it is back.
func TestWorkerRidesOutPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster of its own")
	}
	if _, err := embedpg.FindBinDir(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
	t.Parallel()
	ctx := context.Background()
	// Not t.TempDir: the cluster runs as the postgres user when the test
	// runs as root, and must be able to enter every parent directory.
	dir, err := os.MkdirTemp("", "wg-pg-restart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := embedpg.Config{DataDir: filepath.Join(dir, "pg"), Fast: true, Database: "wg"}
	pg, err := embedpg.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop(context.Background()) })

	_, agent, seen := agentOn(t, pg.URL("wg"))
	cl, err := agent.Claim(ctx, "p", client.ClaimRequest{Worker: "w1", LeaseSeconds: 120})
	if err != nil {
		t.Fatal(err)
	}

	// restart stops PostgreSQL, runs call, starts PostgreSQL again once the
	// server has answered call 503 three times, and fails unless call then
	// succeeded.
	restart := func(what string, call func() error) {
		t.Helper()
		if err := pg.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		before := seen.count(http.StatusServiceUnavailable)
		done := make(chan error, 1)
		go func() { done <- call() }()
		for seen.count(http.StatusServiceUnavailable) < before+3 {
			select {
			case err := <-done:
				t.Fatalf("%s while PostgreSQL was down: %v", what, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
		if pg, err = embedpg.Start(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s through a PostgreSQL restart: %v", what, err)
		}
	}
	restart("heartbeat", func() error {
		_, err := agent.Heartbeat(ctx, cl.Lease.ID, client.HeartbeatRequest{Epoch: cl.Lease.Epoch})
		return err
	})
	restart("complete", func() error {
		_, err := agent.Complete(ctx, cl.Lease.ID, client.CompleteRequest{Epoch: cl.Lease.Epoch, Result: []byte(`1`)})
		return err
	})
	it, err := agent.GetItem(ctx, "p", cl.Item.ID)
	if err != nil || it.State != "done" {
		t.Fatalf("item after the completion: %+v, %v", it, err)
	}
	if n := seen.count(http.StatusInternalServerError); n != 0 {
		t.Fatalf("%d answers were 500 while PostgreSQL restarted, want 0", n)
	}
}
