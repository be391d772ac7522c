package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/server"
)

// benchServer is a running workgraph server the REST workloads talk to:
// in process (server.Start on a real socket) or a separate process.
type benchServer struct {
	base  string
	token string // the bootstrap admin token
	admin *client.Client
	http  *http.Client
	// pid of the server process (workload 7); 0 when in process.
	pid  int
	stop func()
}

// maxAgents bounds the simulated agents of one server, for the HTTP
// transport's idle connection pool.
const maxAgents = 256

func randomToken() string {
	var b [24]byte
	rand.Read(b[:])
	return "wgbench-" + hex.EncodeToString(b[:])
}

// inProcessServer returns the run's in-process server, starting it on
// first use with the same pool size as the direct runs, rate limits off
// (the benchmark measures capacity, not the policy) and its log in a file.
func (e *env) inProcessServer(ctx context.Context) (*benchServer, error) {
	if e.srv != nil {
		return e.srv, nil
	}
	logPath := filepath.Join(os.TempDir(), "workgraph-bench-server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	tok := randomToken()
	s, err := server.Start(ctx, server.Config{
		DatabaseURL:    withPoolSize(e.url, e.cfg.Pool),
		Addr:           "127.0.0.1:0",
		BootstrapToken: tok,
		Logger:         slog.New(slog.NewTextHandler(logFile, nil)),
		RateLimit:      -1,
		// Workload 10's webhook receivers listen on loopback.
		Webhooks: server.WebhooksConfig{AllowPrivate: true},
	})
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start server (log %s): %w", logPath, err)
	}
	bs, err := newBenchServer(s.URL(), tok)
	if err != nil {
		return nil, err
	}
	bs.stop = func() {
		s.Shutdown(context.Background())
		logFile.Close()
	}
	e.srv = bs
	e.closer = append(e.closer, bs.stop)
	e.logf("  in-process server at %s (log %s)", s.URL(), logPath)
	return bs, nil
}

func newBenchServer(base, token string) (*benchServer, error) {
	hc := newHTTPClient(maxAgents)
	admin, err := client.New(base, token, client.WithHTTPClient(hc), client.WithRetries(1))
	if err != nil {
		return nil, err
	}
	return &benchServer{base: base, token: token, admin: admin, http: hc}, nil
}

// restProject creates a project through the API and returns its id.
func (s *benchServer) restProject(ctx context.Context, name string) (uuid.UUID, error) {
	p, err := s.admin.CreateProject(ctx, name)
	if err != nil {
		return uuid.Nil, fmt.Errorf("create project: %w", err)
	}
	return uuid.Parse(p.ID)
}

// variantAgents returns n agents for one variant of a workload that runs
// both ways, and the variant's name: "rest" (agents with their own tokens,
// through the Go client) or "server-sql" (on the lease service directly).
func (s *benchServer) variantAgents(ctx context.Context, e *env, project uuid.UUID, n int, rest bool) (string, []agent, error) {
	if rest {
		agents, err := s.restAgents(ctx, project, n, false)
		return "rest", agents, err
	}
	return "server-sql", serviceAgents(e, project, n), nil
}

// restAgents mints one agent token per agent (as real agents each have
// their own) and returns agents speaking through the Go client, or through
// bare net/http without Idempotency-Key when raw.
func (s *benchServer) restAgents(ctx context.Context, project uuid.UUID, n int, raw bool) ([]agent, error) {
	agents := make([]agent, n)
	for i := range agents {
		t, err := s.admin.CreateToken(ctx, project.String(), client.CreateTokenRequest{
			Name: fmt.Sprintf("bench-agent-%d", i), Role: "agent",
		})
		if err != nil {
			return nil, fmt.Errorf("create agent token: %w", err)
		}
		worker := fmt.Sprintf("bench-%d", i)
		if raw {
			agents[i] = &rawAgent{http: s.http, base: s.base, token: t.Secret, project: project.String(), worker: worker}
			continue
		}
		c, err := client.New(s.base, t.Secret, client.WithHTTPClient(s.http), client.WithRetries(1))
		if err != nil {
			return nil, err
		}
		agents[i] = &clientAgent{c: c, project: project.String(), worker: worker}
	}
	return agents, nil
}
