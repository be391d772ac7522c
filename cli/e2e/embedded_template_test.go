package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/internal/treecopy"
)

// firstStart is the data folder of one embedded cluster that `workgraph
// serve` made on an empty folder (initdb, every migration) and stopped on
// SIGTERM, once per test binary, checked as it goes (the first start's
// test, see makeFirstStart). A lifecycle test whose subject is not the
// first start (kill -9 and adoption, a refused second server, db status
// and stop) starts from a copy of it (startedDir) instead of an initdb
// and the migrations of its own: those were most of each test's CPU, and
// three at once held the package's parallel slots for 15 to 40 s each.
var firstStart struct {
	once sync.Once
	base string // removed by TestMain; the cluster is base/pg
	err  error
}

// initdbLine is what serve logs when it runs initdb (embedpg).
const initdbLine = "initializing PostgreSQL cluster"

// removeFirstStart removes the first start's folder, if one was made.
func removeFirstStart() {
	if firstStart.base != "" {
		os.RemoveAll(firstStart.base)
	}
}

// startedDir returns the path of a new data folder (as embeddedDir) that
// holds a copy of the first start's stopped cluster: serve finds a cluster
// made and migrated, and starts it.
func startedDir(t *testing.T) string {
	t.Helper()
	dir := embeddedDir(t)
	copyFirstStart(t, dir)
	return dir
}

// copyFirstStart copies the first start's stopped cluster into dir, which
// must not exist.
func copyFirstStart(t *testing.T, dir string) {
	t.Helper()
	requireFirstStart(t)
	if err := copyCluster(filepath.Join(firstStart.base, "pg"), dir); err != nil {
		t.Fatalf("copy the first start's cluster: %v", err)
	}
}

// requireFirstStart makes the first start, once, and fails the test if it
// failed.
func requireFirstStart(t *testing.T) {
	t.Helper()
	firstStart.once.Do(func() { firstStart.base, firstStart.err = makeFirstStart() })
	if firstStart.err != nil {
		t.Fatalf("the first start of serve on an empty folder: %v", firstStart.err)
	}
}

// makeFirstStart runs `workgraph serve` on an empty folder and checks what
// a first start must do: it listens and answers /readyz (so initdb and
// every migration ran), exits 0 on SIGTERM and stops the postmaster it
// started. It returns the folder holding the stopped cluster (pg/).
func makeFirstStart() (base string, err error) {
	base, err = os.MkdirTemp("/tmp", "wg-first-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(base, 0o755); err != nil {
		return base, err
	}
	dir, home := filepath.Join(base, "pg"), filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return base, err
	}
	p := &serveProc{cmd: exec.Command(bin, "serve", "--addr", "127.0.0.1:0"), stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Env = envFor(home, dir)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		return base, err
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	defer func() {
		if err != nil {
			p.cmd.Process.Kill()
			<-p.done
			stopPostmaster(dir)
		}
	}()
	deadline := time.Now().Add(3 * time.Minute)
	for p.addr == "" {
		if p.exited() {
			return base, fmt.Errorf("serve exited before listening: %v\n%s", p.cmd.ProcessState, p.stderr)
		}
		if time.Now().After(deadline) {
			return base, fmt.Errorf("serve did not listen within 3 minutes\n%s", p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
		p.addr = p.listening()
	}
	if code := readyz(p.addr); code != http.StatusOK {
		return base, fmt.Errorf("GET /readyz = %d\n%s", code, p.stderr)
	}
	pm := postmasterPID(dir)
	if !alive(pm) {
		return base, fmt.Errorf("no postmaster running for %s (pid %d)\n%s", dir, pm, p.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION")); err != nil {
		return base, fmt.Errorf("no cluster made in %s: %v", dir, err)
	}
	if !strings.Contains(p.stderr.String(), initdbLine) {
		return base, fmt.Errorf("serve on an empty folder did not say it ran initdb (%q)\n%s", initdbLine, p.stderr)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return base, err
	}
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		return base, fmt.Errorf("serve did not exit within 2 minutes of SIGTERM\n%s", p.stderr)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return base, fmt.Errorf("serve exited %d on SIGTERM\n%s", code, p.stderr)
	}
	if alive(pm) {
		return base, fmt.Errorf("the postmaster %d it started still runs after serve exited on SIGTERM\n%s", pm, p.stderr)
	}
	return base, nil
}

// stopPostmaster stops whatever postmaster runs in dir (as
// killPostmaster, without a test).
func stopPostmaster(dir string) {
	pid := postmasterPID(dir)
	if !alive(pid) {
		return
	}
	syscall.Kill(pid, syscall.SIGQUIT)
	for i := 0; i < 200 && alive(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// copyCluster copies the folder of a stopped embedded cluster from src to
// dst (which must not exist): the folder itself and its data directory,
// keeping modes and owners (as root the files belong to the user the
// cluster runs as). The rest (sockets, locks, the log) is the running
// server's, made again at its start.
func copyCluster(src, dst string) error {
	return treecopy.Copy(src, dst, func(rel string) bool {
		top, _, _ := strings.Cut(rel, string(filepath.Separator))
		return top == "data"
	})
}
