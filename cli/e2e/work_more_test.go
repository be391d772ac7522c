package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// TestWorkServerGone: when no heartbeat gets through before the lease runs
// out (the server is gone), the supervisor stops the command by itself and
// exits 4.
func TestWorkServerGone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("the server will vanish")
	sup := e.cmd(e.agentToken, nil, "work", "--lease", "2s", "--grace", "1s", "--", "sleep", "300")
	var stderr bytes.Buffer
	sup.Stderr = &stderr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { sup.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			sup.Process.Kill()
		}
	}()
	eventually(t, 10*time.Second, "the item to be leased", func() bool { return e.get(it.ID).State == client.StateLeased })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.srv.Shutdown(ctx)
	gone := time.Now()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("the supervisor did not stop after its server vanished\n%s", stderr.String())
	}
	if took := time.Since(gone); took > 6*time.Second {
		t.Fatalf("took %s to stop", took)
	}
	if code := sup.ProcessState.ExitCode(); code != 4 || !strings.Contains(stderr.String(), "no heartbeat got through") {
		t.Fatalf("exit = %d\n%s", code, stderr.String())
	}
}

// TestWorkNonBlockingAsk: a non-blocking question keeps the lease; the
// person's answer reaches the command through the answers file.
func TestWorkNonBlockingAsk(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it := e.item("ask and carry on")
	script := `"$WORKGRAPH_BIN" ask --non-blocking "Which colour?" >/dev/null
for i in $(seq 1 200); do
  if grep -q '"answer": "blue"' "$WORKGRAPH_ANSWERS_FILE" 2>/dev/null; then
    cp "$WORKGRAPH_ANSWERS_FILE" "$WORKGRAPH_RESULT_FILE"; exit 0
  fi
  sleep 0.1
done
exit 9`
	done := make(chan result, 1)
	go func() { done <- e.run(e.agentToken, nil, "work", "--lease", "3s", "--", "sh", "-c", script) }()
	var reqID string
	eventually(t, 15*time.Second, "the question", func() bool {
		page, err := e.human.ListAttention(ctx, e.project, client.ListAttentionOptions{})
		if err == nil && len(page.Attention) == 1 {
			reqID = page.Attention[0].ID
		}
		return reqID != ""
	})
	if _, err := e.human.Resolve(ctx, reqID, "blue"); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("work: %v", r)
	}
	got := e.get(it.ID)
	var answers []client.AttentionRequest
	if err := json.Unmarshal(got.Result, &answers); err != nil || len(answers) != 1 || answers[0].Answer == nil || *answers[0].Answer != "blue" {
		t.Fatalf("result = %s (%v)", got.Result, err)
	}
	if got.State != client.StateDone {
		t.Fatalf("state = %s", got.State)
	}
}

// TestWorkSupervisorKilled: a supervisor killed outright (kill -9, as the
// OOM killer does) takes its command with it: the command, and what the
// command started, are stopped within the grace period instead of going
// on, unsupervised, with an item whose lease will run out and go to
// another worker. A command that ignores SIGTERM is killed after the
// grace period.
func TestWorkSupervisorKilled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script string
	}{
		// A shell that started a child and waits for it: the child is not
		// the supervisor's and would outlive the shell.
		{"OK", `sleep 300 & echo $! > "$PIDS"; echo $$ >> "$PIDS"; wait`},
		{"IgnoresSIGTERM", `trap '' TERM; sleep 300 & echo $! > "$PIDS"; echo $$ >> "$PIDS"; wait; wait`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.item("the supervisor will be killed")
			pidFile := filepath.Join(t.TempDir(), "pids")
			sup := e.cmd(e.agentToken, []string{"PIDS=" + pidFile}, "work", "--lease", "60s", "--grace", "1s", "--", "sh", "-c", tc.script)
			if err := sup.Start(); err != nil {
				t.Fatal(err)
			}
			var pids []int
			eventually(t, 10*time.Second, "the command and its child to start", func() bool {
				data, _ := os.ReadFile(pidFile)
				pids = pids[:0]
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
				return len(pids) == 2
			})
			if err := sup.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			sup.Wait()
			for _, pid := range pids {
				eventually(t, 10*time.Second, fmt.Sprintf("process %d to end with its supervisor", pid), func() bool { return processGone(pid) })
			}
		})
	}
}

// processGone reports whether pid has exited: no such process, or one
// that is only waiting to be reaped (a zombie: its parent died too, and
// whoever adopted it has not collected it yet).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// TestWorkBinaryReplaced: a `work --loop` supervisor whose binary is
// replaced on disk (an upgrade while it runs) still starts its next
// command: the guard it starts each command through is the running binary,
// not whatever the path now holds.
func TestWorkBinaryReplaced(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	self := filepath.Join(dir, "workgraph")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(self, data, 0o755); err != nil {
		t.Fatal(err)
	}
	first := e.item("before the upgrade")
	sup := e.cmd(e.agentToken, nil, "work", "--loop", "--wait", "30s", "--", "true")
	sup.Path, sup.Args[0] = self, self
	var stderr bytes.Buffer
	sup.Stderr = &stderr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sup.Process.Kill(); sup.Wait() }()
	eventually(t, 20*time.Second, "the first item to be done", func() bool { return e.get(first.ID).State == client.StateDone })
	if err := os.Remove(self); err != nil {
		t.Fatal(err)
	}
	second := e.item("after the upgrade")
	eventually(t, 20*time.Second, "the second item to be done", func() bool {
		return e.get(second.ID).State == client.StateDone
	})
	if strings.Contains(stderr.String(), "cannot start") {
		t.Fatalf("the supervisor could not start a command after its binary was replaced:\n%s", stderr.String())
	}
}

// TestWorkReportsThroughAnOutage: the command finished, but the server is
// unreachable for longer than the client's own retries last (reportRetries
// of them here; about 20 s at most by default): the supervisor keeps
// sending the completion until the lease would run out, and the item is
// done once the server is back, instead of the work being lost and done
// again after the lease expires.
func TestWorkReportsThroughAnOutage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("finished during an outage")
	link := newLink(t, strings.TrimPrefix(e.url, "http://"))
	sup, stderr := reportThroughCut(t, e, link, 0, link.setDown)
	if code := sup.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit = %d\n%s", code, stderr.String())
	}
	if got := e.get(it.ID); got.State != client.StateDone {
		t.Fatalf("item after the outage = %s, want done\n%s", got.State, stderr.String())
	}
}

// reportRetries is the supervisor's WORKGRAPH_RETRIES in reportThroughCut:
// few, so that the client's retries are spent in well under a second
// rather than the default's 15 to 20 s, and more than one, so that they
// are seen to happen.
const reportRetries = 2

// reportThroughCut runs `work` through link on the env's one item, with a
// command that exits with exit once the test lets it; the link is cut
// (cut(true)) from just before the command ends until the supervisor
// says it tries its report again (the client's own retries,
// WORKGRAPH_RETRIES=reportRetries of them, told on stderr first, spent),
// then mended. It fails the test when the client's retries are not told
// before the supervisor's, when the supervisor gives up meanwhile, or when
// it does not finish after the mend, and returns the ended supervisor and
// its standard error.
func reportThroughCut(t *testing.T, e *env, link *link, exit int, cut func(bool)) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	dir := t.TempDir()
	gate, started := filepath.Join(dir, "go"), filepath.Join(dir, "started")
	sup := e.cmd(e.agentToken, []string{"WORKGRAPH_URL=http://" + link.addr, "GO=" + gate, "STARTED=" + started,
		fmt.Sprintf("WORKGRAPH_RETRIES=%d", reportRetries)},
		"work", "--lease", "90s", "--", "sh", "-c",
		fmt.Sprintf(`touch "$STARTED"; while [ ! -e "$GO" ]; do sleep 0.1; done; echo ended >&2; exit %d`, exit))
	stderr := &lockedBuffer{}
	sup.Stderr = stderr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { sup.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			sup.Process.Kill()
			<-exited
		}
	})
	// The command runs: the claim's answer has come back through the link.
	eventually(t, 10*time.Second, "the command to start", func() bool { _, err := os.Stat(started); return err == nil })
	cut(true)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the supervisor to try again or give up", func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		return strings.Contains(stderr.String(), "trying again until the lease runs out")
	})
	select {
	case <-exited:
		t.Fatalf("the supervisor gave up while the link was cut:\n%s", stderr.String())
	default:
	}
	// The report's own retries came first, as many as set.
	told, _, _ := strings.Cut(stderr.String(), "trying again until the lease runs out")
	if _, afterEnd, ok := strings.Cut(told, "ended\n"); !ok || strings.Count(afterEnd, "retrying in") != reportRetries {
		t.Fatalf("want %d retries of the report told before the supervisor tries again:\n%s", reportRetries, stderr.String())
	}
	cut(false)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the supervisor did not finish after the link was mended\n%s", stderr.String())
	}
	return sup, stderr
}

// link is a TCP relay to a server that the test can cut: while down it
// drops every connection, open or new; while swallowing it carries
// requests to the server but drops each connection as the answer starts
// (the request was taken, its answer is lost).
type link struct {
	addr    string
	mu      sync.Mutex
	down    bool
	swallow bool
	conns   map[net.Conn]bool
}

func newLink(t *testing.T, target string) *link {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	k := &link{addr: l.Addr().String(), conns: map[net.Conn]bool{}}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go k.relay(c, target)
		}
	}()
	return k
}

func (k *link) relay(c net.Conn, target string) {
	k.mu.Lock()
	if k.down {
		k.mu.Unlock()
		c.Close()
		return
	}
	k.conns[c] = true
	swallow := k.swallow
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		delete(k.conns, c)
		k.mu.Unlock()
		c.Close()
	}()
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { io.Copy(s, c); s.Close() }()
	if swallow {
		s.Read(make([]byte, 1)) // the answer begins: drop it
		return
	}
	io.Copy(c, s)
}

// setSwallow makes connections lose their answers (closing those open,
// so that every later request comes on a new one), or not.
func (k *link) setSwallow(on bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.swallow = on
	if on {
		for c := range k.conns {
			c.Close()
		}
	}
}

// setDown cuts the link (closing what is open) or mends it.
func (k *link) setDown(down bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.down = down
	if down {
		for c := range k.conns {
			c.Close()
		}
	}
}

// TestWorkFailureTakenAnswerLost: the command failed and the supervisor's
// failure report was taken by the server, but every answer to it was lost
// (the client's retries of it included). The report sent again is refused
// (the lease ended with that very failure): the supervisor reads the
// lease's history and says the item was reported failed, and exits 1 as
// after any failure, not 0 as if the command had ended the lease itself.
func TestWorkFailureTakenAnswerLost(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("fails while answers are lost")
	link := newLink(t, strings.TrimPrefix(e.url, "http://"))
	sup, stderr := reportThroughCut(t, e, link, 3, link.setSwallow)
	ls := e.leases(it.ID)
	if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeFailed {
		t.Fatalf("leases = %+v, want the one lease ended failed", ls)
	}
	if code := sup.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "reported failed") {
		t.Fatalf("exit = %d, want 1 saying the item was reported failed\n%s", code, stderr.String())
	}
}

// TestWorkCompletionBlocked: the command adds a child to its own item (as
// a person could while it runs), then exits 0. The completion is refused
// as blocked; the supervisor neither retries it nor leaves the lease to
// expire: it releases the item, saying why in the release's reason, and
// exits 6 naming the refusal. The item then waits for its child.
func TestWorkCompletionBlocked(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("grows a child while it runs")
	r := e.run(e.agentToken, nil, "work", "--lease", "30s", "--", "sh", "-c",
		`"$WORKGRAPH_BIN" items add "a child" --parent "$WORKGRAPH_ITEM_ID" >/dev/null && echo '{"ok": true}' > "$WORKGRAPH_RESULT_FILE"`)
	if r.code != 6 || !strings.Contains(r.stderr, "waits for work added while it ran") {
		t.Fatalf("work: exit %d, want 6 saying the item waits for work\n%v", r.code, r)
	}
	// The item was released: the refusal's "the lease is still held" (its
	// advice to a worker that keeps the lease) would contradict that.
	if !strings.Contains(r.stderr, "1 open child") || strings.Contains(r.stderr, "still held") {
		t.Errorf("work says the lease is still held, or not what the item waits for, of an item it released:\n%s", r.stderr)
	}
	if got := e.get(it.ID); got.State != client.StateBlocked {
		t.Errorf("item is %s after the refused completion, want blocked (waiting for its child)", got.State)
	}
	ls := e.leases(it.ID)
	if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeReleased ||
		!strings.Contains(string(ls[0].OutcomeDetail), "blocked") || !strings.Contains(string(ls[0].OutcomeDetail), `ok`) {
		t.Fatalf("leases %+v, want one released naming the refusal and the result", ls)
	}
}
