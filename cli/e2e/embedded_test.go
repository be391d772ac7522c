package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db/embedpg"
	"github.com/workgraph-dev/workgraph/server/servertest"
)

// The tests in this file run `workgraph serve` and `workgraph db` as real
// processes on an embedded PostgreSQL of their own (one data folder per
// test, unix sockets only, HTTP on port 0), and kill them with SIGKILL and
// SIGTERM: the embedded cluster's lifecycle is about processes dying. One
// first start on an empty folder is made per test binary; the tests of
// what follows it start from a copy of its cluster (firstStart).

// requireEmbedded skips when the PostgreSQL server binaries are missing.
func requireEmbedded(t *testing.T) {
	t.Helper()
	if _, err := embedpg.FindBinDir(); err != nil {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
}

// embeddedDir returns the path of a data folder that does not exist yet,
// short enough for the socket path. As root it is under /tmp, which the
// postgres user can traverse (t.TempDir's parent is mode 0700). Any server
// still running there is stopped when the test ends.
func embeddedDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("/tmp", "wg-life-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "pg")
	t.Cleanup(func() {
		killPostmaster(t, dir)
		os.RemoveAll(base)
	})
	return dir
}

// postmasterPID is the pid recorded in dir's postmaster.pid, or 0.
func postmasterPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// killPostmaster stops whatever postmaster runs in dir, by signal, without
// relying on the code under test (SIGQUIT: immediate shutdown).
func killPostmaster(t *testing.T, dir string) {
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

// lockedBuffer is a bytes.Buffer safe for a process writing while the test
// reads.
type lockedBuffer = servertest.SyncBuffer

// serveProc is a running `workgraph serve`.
type serveProc struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{} // closed when the process has exited
	addr   string        // the address it listens on, once it does
}

// embeddedEnv is a clean environment: no database URL, so serve and db use
// the embedded cluster in dir.
func embeddedEnv(t *testing.T, dir string) []string {
	return envFor(t.TempDir(), dir)
}

// envFor is embeddedEnv with the home folder home.
func envFor(home, dir string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "WORKGRAPH_DATA_DIR=" + dir}
	if v := os.Getenv(embedpg.EnvBinDir); v != "" {
		env = append(env, embedpg.EnvBinDir+"="+v)
	}
	return env
}

// startServe starts `workgraph serve` on dir; it is killed at cleanup if
// still running.
func startServe(t *testing.T, dir string, args ...string) *serveProc {
	t.Helper()
	if len(args) == 0 {
		args = []string{"--addr", "127.0.0.1:0"}
	}
	p := &serveProc{cmd: exec.Command(bin, append([]string{"serve"}, args...)...), stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Env = embeddedEnv(t, dir)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// exited reports whether the process has exited.
func (p *serveProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// listening returns the address from the "workgraph listening" log line,
// or "".
func (p *serveProc) listening() string {
	sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `msg="workgraph listening"`) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if a, ok := strings.CutPrefix(f, "addr="); ok {
				return a
			}
		}
	}
	return ""
}

// waitReady waits until the server listens and answers /readyz.
func (p *serveProc) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for p.addr == "" {
		if p.exited() {
			t.Fatalf("serve exited before listening: %v\n%s", p.cmd.ProcessState, p.stderr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen within 3 minutes\n%s", p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
		p.addr = p.listening()
	}
	if code := readyz(p.addr); code != http.StatusOK {
		t.Fatalf("GET /readyz = %d\n%s", code, p.stderr)
	}
}

func readyz(addr string) int {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// wait waits (bounded) for the process to exit and returns its exit code.
func (p *serveProc) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("serve did not exit within %s\n%s", within, p.stderr)
		return -1
	}
}

// runDB runs `workgraph db args...` on dir to completion.
func runDB(t *testing.T, dir string, args ...string) result {
	t.Helper()
	c := exec.Command(bin, append([]string{"db"}, args...)...)
	c.Env = embeddedEnv(t, dir)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	done := make(chan struct{})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		c.Process.Kill()
		<-done
		t.Fatalf("workgraph db %s did not finish\n%s", strings.Join(args, " "), errb.String())
	}
	return result{code: c.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// dbStatus is `workgraph db status --json`.
type dbStatus struct {
	DataDir   string `json:"data_dir"`
	SocketDir string `json:"socket_dir"`
	Running   bool   `json:"running"`
	PID       int    `json:"pid"`
	OwnerPID  int    `json:"owner_pid"`
	Version   string `json:"version"`
	SizeBytes int64  `json:"size_bytes"`
}

func status(t *testing.T, dir string) dbStatus {
	t.Helper()
	r := runDB(t, dir, "status", "--json")
	if r.code != 0 {
		t.Fatalf("db status: %v", r)
	}
	var s dbStatus
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("db status --json: %v\n%s", err, r.stdout)
	}
	return s
}

func TestEmbeddedLifecycle(t *testing.T) {
	t.Parallel()
	requireEmbedded(t)

	// Serve on an empty folder: initdb, every migration, a clean stop on
	// SIGTERM (makeFirstStart). Done once; the subtests below start from
	// a copy of that cluster.
	t.Run("OKFirstStartOnEmptyFolder", func(t *testing.T) {
		t.Parallel()
		requireFirstStart(t)
	})

	t.Run("OKKill9ThenAdoptedAndStopped", func(t *testing.T) {
		t.Parallel()
		dir := startedDir(t)
		first := startServe(t, dir)
		first.waitReady(t)
		if strings.Contains(first.stderr.String(), initdbLine) {
			t.Errorf("serve ran initdb on the copy of a made cluster:\n%s", first.stderr)
		}
		pm := postmasterPID(dir)
		if !alive(pm) {
			t.Fatalf("no postmaster running for %s (pid %d)", dir, pm)
		}
		first.cmd.Process.Kill()
		first.wait(t, time.Minute)
		// kill -9 leaves the database running: nothing could stop it.
		if !alive(pm) {
			t.Fatalf("postmaster %d died with its owner", pm)
		}

		second := startServe(t, dir)
		second.waitReady(t)
		if got := postmasterPID(dir); got != pm {
			t.Errorf("postmaster pid = %d after the restart, want %d adopted", got, pm)
		}
		if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := second.wait(t, 2*time.Minute); code != 0 {
			t.Errorf("serve exited %d on SIGTERM\n%s", code, second.stderr)
		}
		if alive(pm) {
			t.Fatalf("the adopted postmaster %d is still running after serve exited on SIGTERM\n%s", pm, second.stderr)
		}
	})

	t.Run("ErrSecondServerRefused", func(t *testing.T) {
		t.Parallel()
		dir := startedDir(t)
		first := startServe(t, dir)
		first.waitReady(t)
		pm := postmasterPID(dir)

		second := startServe(t, dir)
		deadline := time.Now().Add(time.Minute)
		for !second.exited() {
			if second.listening() != "" || time.Now().After(deadline) {
				t.Fatalf("a second serve on %s was not refused\n%s", dir, second.stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		msg := second.stderr.String()
		if second.cmd.ProcessState.ExitCode() == 0 || !strings.Contains(msg, dir) ||
			!strings.Contains(msg, "pid "+strconv.Itoa(first.cmd.Process.Pid)) {
			t.Errorf("second serve: exit %d, want a refusal naming %s and pid %d:\n%s",
				second.cmd.ProcessState.ExitCode(), dir, first.cmd.Process.Pid, msg)
		}
		if strings.Contains(msg, "starting PostgreSQL") || strings.Contains(msg, "migrat") {
			t.Errorf("the refused serve touched the database:\n%s", msg)
		}
		// The first is unharmed.
		if !alive(pm) || postmasterPID(dir) != pm {
			t.Fatalf("postmaster %d is gone after the refused second serve", pm)
		}
		if code := readyz(first.addr); code != http.StatusOK {
			t.Fatalf("first serve /readyz = %d after the refused second serve", code)
		}

		// A one-off command uses the owner's cluster and leaves it running.
		c := exec.Command(bin, "migrate", "status")
		c.Env = embeddedEnv(t, dir)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("migrate status beside the owner: %v\n%s", err, out)
		}
		if !alive(pm) || readyz(first.addr) != http.StatusOK {
			t.Fatalf("migrate status stopped the owner's database")
		}
	})

	t.Run("ErrBusyAddressBeforeDatabase", func(t *testing.T) {
		t.Parallel()
		dir := embeddedDir(t)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		p := startServe(t, dir, "--addr", ln.Addr().String())
		if code := p.wait(t, 2*time.Minute); code == 0 {
			t.Fatalf("serve on a busy address exited 0\n%s", p.stderr)
		}
		msg := p.stderr.String()
		if !strings.Contains(msg, ln.Addr().String()) || !strings.Contains(msg, "address already in use") {
			t.Errorf("want an error naming %s in use:\n%s", ln.Addr(), msg)
		}
		// Refused before the database: no data folder, no initdb, no
		// postmaster.
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("data folder %s exists after a refused start (err %v)\n%s", dir, err, msg)
		}
		if strings.Contains(msg, "PostgreSQL") {
			t.Errorf("the refused serve started PostgreSQL:\n%s", msg)
		}
	})

	t.Run("OKDBStatusAndStop", func(t *testing.T) {
		t.Parallel()
		dir := embeddedDir(t)
		if s := status(t, dir); s.Running || s.PID != 0 || s.OwnerPID != 0 {
			t.Fatalf("status of a folder that does not exist: %+v", s)
		}
		copyFirstStart(t, dir)
		srv := startServe(t, dir)
		srv.waitReady(t)
		pm := postmasterPID(dir)
		s := status(t, dir)
		if !s.Running || s.PID != pm || s.OwnerPID != srv.cmd.Process.Pid || s.DataDir != dir ||
			s.SocketDir != filepath.Join(dir, "run") || s.Version == "" || s.SizeBytes <= 0 {
			t.Errorf("status while serve %d runs postmaster %d: %+v", srv.cmd.Process.Pid, pm, s)
		}
		if r := runDB(t, dir, "status"); r.code != 0 || !strings.Contains(r.stdout, strconv.Itoa(pm)) ||
			!strings.Contains(r.stdout, strconv.Itoa(srv.cmd.Process.Pid)) {
			t.Errorf("db status: %v", r)
		}

		// A live owner: refused, and it explains.
		r := runDB(t, dir, "stop")
		if r.code == 0 || !strings.Contains(r.stderr, "pid "+strconv.Itoa(srv.cmd.Process.Pid)) || !strings.Contains(r.stderr, "--force") {
			t.Errorf("db stop under a live serve: %v", r)
		}
		if !alive(pm) || readyz(srv.addr) != http.StatusOK {
			t.Fatalf("db stop without --force harmed the running server")
		}

		// Its owner killed: the cluster is left behind, and db stop stops it.
		srv.cmd.Process.Kill()
		srv.wait(t, time.Minute)
		if s := status(t, dir); !s.Running || s.PID != pm || s.OwnerPID != 0 {
			t.Errorf("status after kill -9 of the owner: %+v", s)
		}
		if r := runDB(t, dir, "stop"); r.code != 0 {
			t.Fatalf("db stop of a left-behind cluster: %v", r)
		}
		if alive(pm) {
			t.Fatalf("postmaster %d still runs after db stop", pm)
		}
		if s := status(t, dir); s.Running || s.PID != 0 {
			t.Errorf("status after db stop: %+v", s)
		}
		if r := runDB(t, dir, "stop"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "not running") {
			t.Errorf("db stop with nothing running: %v", r)
		}

		// --force stops it under a live owner.
		again := startServe(t, dir)
		again.waitReady(t)
		pm = postmasterPID(dir)
		if r := runDB(t, dir, "stop", "--force"); r.code != 0 {
			t.Fatalf("db stop --force: %v", r)
		}
		if alive(pm) {
			t.Fatalf("postmaster %d still runs after db stop --force", pm)
		}
	})

	t.Run("OKHelp", func(t *testing.T) {
		t.Parallel()
		r := runDB(t, t.TempDir(), "--help")
		for _, want := range []string{"status", "stop", "--data-dir"} {
			if r.code != 0 || !strings.Contains(r.stdout, want) {
				t.Errorf("db --help lacks %q: %v", want, r)
			}
		}
		if r := runDB(t, t.TempDir(), "bogus"); r.code != 2 {
			t.Errorf("db bogus: %v, want exit 2", r)
		}
		r = runDB(t, t.TempDir(), "stop", "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "--force") || !strings.Contains(r.stdout, "WORKGRAPH_DATA_DIR") {
			t.Errorf("db stop --help: %v", r)
		}
	})
}
