package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/server"
)

// The clients' end-to-end scripts run against a real server (server.Start
// on port 0, a fresh database: the server commits). .ci/run installs node,
// npm and python3 and runs `npm ci` in typescript/, so there these tests
// never skip; elsewhere they skip with the command that enables them.

const adminToken = "clients-test-admin-token"

// target is a server with a project of the test's own and a token of each
// role a script needs, as the environment the scripts read.
func target(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	srv, err := server.Start(ctx, server.Config{
		DatabaseURL: dbtest.URL(t), Addr: "127.0.0.1:0", BootstrapToken: adminToken,
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
	admin, err := client.New(srv.URL(), adminToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateProject(ctx, "e2e"); err != nil {
		t.Fatal(err)
	}
	token := func(name, role string) string {
		tk, err := admin.CreateToken(ctx, "e2e", client.CreateTokenRequest{Name: name, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		return tk.Secret
	}
	return []string{
		// The server is on loopback: a proxy of the environment (which
		// Python's urllib would use for it) must not be asked.
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"WORKGRAPH_URL=" + srv.URL(),
		"WORKGRAPH_PROJECT=e2e",
		"WORKGRAPH_AGENT_TOKEN=" + token("agent", "agent"),
		"WORKGRAPH_HUMAN_TOKEN=" + token("person", "human"),
	}
}

// run runs a command in dir with extra environment, failing the test with
// its output when it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// needNode skips the test when node or the TypeScript client's packages
// are missing, and returns the client's directory.
func needNode(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH (apt-get install -y nodejs npm): skipping the TypeScript client's tests")
	}
	dir, err := filepath.Abs("typescript")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openapi-typescript")); err != nil {
		t.Skip("the TypeScript client's packages are not installed (cd clients/typescript && npm ci): skipping its tests")
	}
	return dir
}

// compiled is the TypeScript client and its tests compiled once for the
// test binary (tsc type-checks them against the generated types).
var compiled struct {
	once sync.Once
	dir  string
	err  error
}

// compileTS compiles the client outside the source tree and returns the
// output's directory; the output finds the packages through a link to
// node_modules and is ESM through a link to package.json.
func compileTS(t *testing.T, src string) string {
	t.Helper()
	compiled.once.Do(func() {
		out, err := os.MkdirTemp("", "workgraph-ts-")
		if err != nil {
			compiled.err = err
			return
		}
		for _, name := range []string{"node_modules", "package.json"} {
			if err := os.Symlink(filepath.Join(src, name), filepath.Join(out, name)); err != nil {
				compiled.err = err
				return
			}
		}
		cmd := exec.Command("node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json", "--outDir", filepath.Join(out, "dist"))
		cmd.Dir = src
		if msg, err := cmd.CombinedOutput(); err != nil {
			compiled.err = fmt.Errorf("tsc: %v\n%s", err, msg)
			return
		}
		compiled.dir = out
	})
	if compiled.err != nil {
		t.Fatal(compiled.err)
	}
	return compiled.dir
}

func TestMain(m *testing.M) {
	code := dbtest.Main(m)
	if compiled.dir != "" {
		os.RemoveAll(compiled.dir)
	}
	os.Exit(code)
}

// TestTypeScriptClientE2E runs the TypeScript client's end-to-end script
// (its cycle and error codes) against a real server.
func TestTypeScriptClientE2E(t *testing.T) {
	t.Parallel()
	dir := needNode(t)
	out := compileTS(t, dir)
	got := run(t, dir, target(t), "node", filepath.Join(out, "dist", "test", "e2e.js"))
	if !strings.Contains(got, "typescript e2e: ok") {
		t.Fatalf("the script did not report success:\n%s", got)
	}
}

// TestTypeScriptClientUnit runs the TypeScript client's offline tests
// (problem decoding, Retry-After, retries and their Idempotency-Keys).
func TestTypeScriptClientUnit(t *testing.T) {
	t.Parallel()
	dir := needNode(t)
	out := compileTS(t, dir)
	got := run(t, dir, nil, "node", "--test", filepath.Join(out, "dist", "test", "unit.js"))
	if !strings.Contains(got, "# fail 0") || strings.Contains(got, "# pass 0") {
		t.Fatalf("node --test did not pass:\n%s", got)
	}
}

// TestTypeScriptTypesCurrent fails when api/openapi.json changed and the
// committed src/schema.ts was not regenerated (`make clients`): it
// regenerates the types with the package's own generate script into a
// temporary file and compares.
func TestTypeScriptTypesCurrent(t *testing.T) {
	t.Parallel()
	dir := needNode(t)
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(pkg.Scripts["generate"])
	if len(args) < 4 || args[0] != "openapi-typescript" || args[len(args)-2] != "--output" {
		t.Fatalf(`package.json's generate script is %q: want "openapi-typescript <document> [flags] --output <file>"`, pkg.Scripts["generate"])
	}
	committed := filepath.Join(dir, args[len(args)-1])
	fresh := filepath.Join(t.TempDir(), "schema.ts")
	args[0] = "node_modules/openapi-typescript/bin/cli.js"
	args[len(args)-1] = fresh
	run(t, dir, nil, "node", args...)
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("%s is stale: api/openapi.json changed and the types were not regenerated (run `make clients` and commit the result)", committed)
	}
}

// needPython skips the test when python3 is missing, and returns the
// Python client's directory.
func needPython(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH (apt-get install -y python3): skipping the Python client's tests")
	}
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPythonClientE2E runs the Python client's end-to-end script (its
// cycle and error codes) against a real server.
func TestPythonClientE2E(t *testing.T) {
	t.Parallel()
	dir := needPython(t)
	env := append(target(t), "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1")
	got := run(t, dir, env, "python3", filepath.Join("tests", "e2e.py"))
	if !strings.Contains(got, "python e2e: ok") {
		t.Fatalf("the script did not report success:\n%s", got)
	}
}

// TestPythonClientUnit runs the Python client's offline tests (problem
// decoding, Retry-After, retries keeping their Idempotency-Key).
func TestPythonClientUnit(t *testing.T) {
	t.Parallel()
	dir := needPython(t)
	got := run(t, dir, []string{"PYTHONPATH=" + dir, "PYTHONDONTWRITEBYTECODE=1"}, "python3", "-m", "unittest", "discover", "-s", "tests", "-v")
	if !strings.Contains(got, "\nOK") {
		t.Fatalf("unittest did not report OK:\n%s", got)
	}
}
