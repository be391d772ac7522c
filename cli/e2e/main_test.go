// Package e2e runs the real workgraph binary (built in TestMain, testbin)
// against a real server started in-process on port 0 with a fresh
// PostgreSQL database per test: the client commands, the work supervisor
// and plan import, end to end.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/internal/testbin"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/server/servertest"
)

// bin is the workgraph binary under test.
var bin string

func TestMain(m *testing.M) {
	var err error
	// Rebuilt when its sources changed, else the previous run's (testbin).
	if bin, err = testbin.Build("github.com/workgraph-dev/workgraph/cmd/workgraph"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := dbtest.Main(m)
	removeFirstStart()
	os.Exit(code)
}

const adminToken = "e2e-bootstrap-admin-token"

// env is a running server with a project and tokens of each role.
type env struct {
	t       *testing.T
	srv     *server.Server
	url     string
	pool    *pgxpool.Pool
	project string
	admin   *client.Client
	agent   *client.Client
	human   *client.Client
	// agentToken and humanToken are the bearer secrets.
	agentToken, humanToken string
}

// setup boots the real server against a fresh database and creates the
// project "e2e" with an agent and a human token.
func setup(t *testing.T) *env {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with the server's config adjusted by tune (when not
// nil) first.
func setupWith(t *testing.T, tune func(*server.Config)) *env {
	t.Helper()
	cfg := server.Config{BootstrapToken: adminToken, RateLimit: -1}
	if tune != nil {
		tune(&cfg)
	}
	srv := servertest.Start(t, cfg)
	e := &env{srv: srv, url: srv.URL(), pool: srv.Pool()}
	return e.inProject(t, "e2e")
}

// boot starts the real server as setup does, without a project: for a
// test whose parallel subtests each take a project of their own
// (inProject).
func boot(t *testing.T) *env {
	t.Helper()
	srv := servertest.Start(t, server.Config{BootstrapToken: adminToken, RateLimit: -1})
	return &env{t: t, srv: srv, url: srv.URL(), pool: srv.Pool()}
}

// inProject returns an env on e's server with a new project of its own,
// named name, and an agent and a human token of it: for the parallel
// subtests of one test that each need a project to themselves but not a
// server of their own (a server's start, the reset of its database
// included, costs about 0.4 s of PostgreSQL CPU). The server's database
// is shared, so a subtest that counts rows of the whole database needs a
// server of its own (setup).
func (e *env) inProject(t *testing.T, name string) *env {
	t.Helper()
	ctx := context.Background()
	p := &env{t: t, srv: e.srv, url: e.url, pool: e.pool, project: name}
	p.admin = p.client(adminToken)
	if _, err := p.admin.CreateProject(ctx, p.project); err != nil {
		t.Fatalf("create project %s: %v", name, err)
	}
	p.agentToken = p.token("agent-1", "agent")
	p.humanToken = p.token("person-1", "human")
	p.agent, p.human = p.client(p.agentToken), p.client(p.humanToken)
	return p
}

func (e *env) client(token string) *client.Client {
	c, err := client.New(e.url, token)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) token(name, role string) string {
	tk, err := e.admin.CreateToken(context.Background(), e.project, client.CreateTokenRequest{Name: name, Role: role})
	if err != nil {
		e.t.Fatalf("create %s token: %v", role, err)
	}
	return tk.Secret
}

// item creates an item through the API.
func (e *env) item(title string, deps ...string) *client.Item {
	e.t.Helper()
	it, err := e.agent.CreateItem(context.Background(), e.project, client.CreateItemRequest{Title: title, DependsOn: deps})
	if err != nil {
		e.t.Fatalf("create item %q: %v", title, err)
	}
	return it
}

// get reads an item back from the server.
func (e *env) get(id string) *client.Item {
	e.t.Helper()
	it, err := e.human.GetItem(context.Background(), e.project, id)
	if err != nil {
		e.t.Fatalf("get item %s: %v", id, err)
	}
	return it
}

// leases returns the stored leases of an item, oldest first.
func (e *env) leases(id string) []client.Lease {
	e.t.Helper()
	ls, err := e.human.ItemLeases(context.Background(), e.project, id)
	if err != nil {
		e.t.Fatalf("leases of %s: %v", id, err)
	}
	return ls
}

// result is what one run of the binary did.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// cmd prepares the binary with a clean environment: the server's URL,
// the token, the project and a HOME without a config file.
func (e *env) cmd(token string, extraEnv []string, args ...string) *exec.Cmd {
	c := exec.Command(bin, args...)
	c.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.t.TempDir(),
		"WORKGRAPH_URL=" + e.url,
		"WORKGRAPH_TOKEN=" + token,
		"WORKGRAPH_PROJECT=" + e.project,
		"WORKGRAPH_WORKER=e2e-worker",
		"WORKGRAPH_BIN=" + bin,
	}, extraEnv...)
	return c
}

// run runs the binary to completion (bounded by a minute).
func (e *env) run(token string, extraEnv []string, args ...string) result {
	e.t.Helper()
	c := e.cmd(token, extraEnv, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		e.t.Fatalf("start %v: %v", args, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		c.Process.Kill()
		<-done
		e.t.Fatalf("workgraph %s did not finish within a minute\n%s", strings.Join(args, " "), errb.String())
	}
	return result{code: c.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *env) countItems() int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), "SELECT count(*) FROM items").Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}
