package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
)

const adminToken = "client-test-admin-token"

// statuses is an HTTP transport that records the status of every answer.
type statuses struct {
	mu   sync.Mutex
	seen []int
}

func (s *statuses) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		s.mu.Lock()
		s.seen = append(s.seen, res.StatusCode)
		s.mu.Unlock()
	}
	return res, err
}

func (s *statuses) count(status int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.seen {
		if st == status || status == 0 {
			n++
		}
	}
	return n
}

// outage cuts the server's database off (no new connections, every
// connection of the server terminated) and returns the function that
// lets it back.
func outage(t *testing.T, srv *server.Server) (restore func()) {
	t.Helper()
	ctx := context.Background()
	var dbName string
	if err := srv.Pool().QueryRow(ctx, "SELECT current_database()").Scan(&dbName); err != nil {
		t.Fatal(err)
	}
	a, err := pgx.Connect(ctx, dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	name := pgx.Identifier{dbName}.Sanitize()
	if _, err := a.Exec(ctx, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = $1", dbName); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if _, err := a.Exec(ctx, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS true"); err != nil {
				t.Error(err)
			}
			a.Close(ctx)
		})
	}
	t.Cleanup(restore)
	return restore
}

// TestWorkerRidesOutDatabaseOutage: a worker using the client keeps its
// lease through database outages: its heartbeat and its completion are
// answered 503 while the database is gone, retried, and succeed once it is
// back, with no step of the caller's; a lease_lost refusal is not retried.
func TestWorkerRidesOutDatabaseOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, agent, seen := agentOn(t, dbtest.URL(t))

	// through runs call during an outage, lets the database back once the
	// server has answered it 503 three times (an outage of a few seconds),
	// and fails unless call then succeeded.
	through := func(what string, call func() error) {
		t.Helper()
		before := seen.count(http.StatusServiceUnavailable)
		restore := outage(t, srv)
		done := make(chan error, 1)
		go func() { done <- call() }()
		deadline := time.Now().Add(20 * time.Second)
		for seen.count(http.StatusServiceUnavailable) < before+3 {
			select {
			case err := <-done:
				t.Fatalf("%s gave up during the outage: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: never answered 503 during the outage", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
		restore()
		if err := <-done; err != nil {
			t.Fatalf("%s through an outage: %v", what, err)
		}
	}

	var cl *client.Claim
	through("claim", func() (err error) {
		cl, err = agent.Claim(ctx, "p", client.ClaimRequest{Worker: "w1", LeaseSeconds: 60})
		return err
	})
	through("heartbeat", func() error {
		_, err := agent.Heartbeat(ctx, cl.Lease.ID, client.HeartbeatRequest{Epoch: cl.Lease.Epoch})
		return err
	})
	through("complete", func() error {
		_, err := agent.Complete(ctx, cl.Lease.ID, client.CompleteRequest{Epoch: cl.Lease.Epoch, Result: []byte(`{"ok":true}`)})
		return err
	})
	it, err := agent.GetItem(ctx, "p", cl.Item.ID)
	if err != nil || it.State != "done" {
		t.Fatalf("item after the completion: %+v, %v", it, err)
	}
	leases, err := agent.ItemLeases(ctx, "p", cl.Item.ID)
	if err != nil || len(leases) != 1 {
		t.Fatalf("leases of the item: %d (%v), want the one lease", len(leases), err)
	}

	// A refusal is final: one request, no retry.
	n := seen.count(0)
	_, err = agent.Heartbeat(ctx, cl.Lease.ID, client.HeartbeatRequest{Epoch: cl.Lease.Epoch})
	if !errors.Is(err, client.ErrLeaseLost) {
		t.Fatalf("heartbeat of an ended lease: %v, want lease_lost", err)
	}
	if got := seen.count(0) - n; got != 1 {
		t.Fatalf("lease_lost took %d requests, want 1", got)
	}
}

// agentOn starts a server on databaseURL (stopped at cleanup) with project
// "p" and one ready item, and returns it with an agent's client whose
// answers seen records.
func agentOn(t *testing.T, databaseURL string) (srv *server.Server, agent *client.Client, seen *statuses) {
	t.Helper()
	ctx := context.Background()
	var err error
	srv, err = server.Start(ctx, server.Config{
		DatabaseURL: databaseURL, Addr: "127.0.0.1:0", BootstrapToken: adminToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	admin, _ := client.New(srv.URL(), adminToken)
	if _, err := admin.CreateProject(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	tk, err := admin.CreateToken(ctx, "p", client.CreateTokenRequest{Name: "bot", Role: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	seen = &statuses{}
	agent, _ = client.New(srv.URL(), tk.Secret, client.WithHTTPClient(&http.Client{Transport: seen}))
	if _, err := agent.CreateItem(ctx, "p", client.CreateItemRequest{Title: "work"}); err != nil {
		t.Fatal(err)
	}
	return srv, agent, seen
}
