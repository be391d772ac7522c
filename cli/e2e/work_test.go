package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/server"
)

func TestWork(t *testing.T) {
	t.Parallel()
	// One server; each subtest works in a project of its own.
	srv := boot(t)
	t.Run("OKCompletesWithResultFile", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "OKCompletesWithResultFile")
		it := e.item("write a result")
		r := e.run(e.agentToken, nil, "work", "--lease", "30s", "--",
			"sh", "-c", `printf '{"ok": true, "item": "%s", "title": "%s"}' "$WORKGRAPH_ITEM_ID" "$WORKGRAPH_ITEM_TITLE" > "$WORKGRAPH_RESULT_FILE"`)
		if r.code != 0 {
			t.Fatalf("work: %v", r)
		}
		got := e.get(it.ID)
		if got.State != client.StateDone {
			t.Fatalf("state = %s, want done\n%v", got.State, r)
		}
		var res struct {
			OK          bool
			Item, Title string
		}
		if err := json.Unmarshal(got.Result, &res); err != nil || !res.OK || res.Item != it.ID || res.Title != "write a result" {
			t.Fatalf("stored result = %s (%v)", got.Result, err)
		}
	})
	t.Run("OKCompletesWithOutputTail", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "OKCompletesWithOutputTail")
		it := e.item("print something")
		r := e.run(e.agentToken, nil, "work", "--", "sh", "-c", `seq 1 3000; echo "the end of $WORKGRAPH_ITEM_ID"`)
		if r.code != 0 {
			t.Fatalf("work: %v", r)
		}
		got := e.get(it.ID)
		var res struct {
			OutputTail string `json:"output_tail"`
		}
		if err := json.Unmarshal(got.Result, &res); err != nil {
			t.Fatalf("result %s: %v", got.Result, err)
		}
		if !strings.HasSuffix(res.OutputTail, "the end of "+it.ID+"\n") || len(res.OutputTail) > 4096 || strings.Contains(res.OutputTail, "\n1\n2\n") {
			t.Fatalf("output_tail (%d bytes) = ...%q", len(res.OutputTail), res.OutputTail[max(0, len(res.OutputTail)-80):])
		}
		if got.State != client.StateDone {
			t.Fatalf("state = %s", got.State)
		}
	})
	t.Run("OKItemFile", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "OKItemFile")
		it := e.item("read the item file")
		r := e.run(e.agentToken, nil, "work", "--", "sh", "-c", `cp "$WORKGRAPH_ITEM_FILE" "$WORKGRAPH_RESULT_FILE"`)
		if r.code != 0 {
			t.Fatalf("work: %v", r)
		}
		var file client.Claim
		if err := json.Unmarshal(e.get(it.ID).Result, &file); err != nil {
			t.Fatal(err)
		}
		if file.Item.ID != it.ID || file.Lease.ItemID != it.ID || file.Lease.Epoch != 1 {
			t.Fatalf("item file = %+v", file)
		}
	})
	t.Run("ErrCommandFails", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "ErrCommandFails")
		it := e.item("fail loudly")
		r := e.run(e.agentToken, nil, "work", "--", "sh", "-c", `echo "starting"; echo "boom: disk on fire" >&2; exit 3`)
		if r.code != 1 {
			t.Fatalf("work exit = %d, want 1\n%v", r.code, r)
		}
		ls := e.leases(it.ID)
		if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeFailed {
			t.Fatalf("leases = %+v", ls)
		}
		if d := string(ls[0].OutcomeDetail); !strings.Contains(d, "exit status 3") || !strings.Contains(d, "disk on fire") {
			t.Fatalf("outcome detail = %s", d)
		}
		if got := e.get(it.ID); got.State == client.StateDone || got.State == client.StateLeased {
			t.Fatalf("state after failure = %s", got.State)
		}
	})
	t.Run("ErrNothingReady", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "ErrNothingReady")
		r := e.run(e.agentToken, nil, "work", "--", "true")
		if r.code != 3 || !strings.Contains(r.stderr, "nothing is ready") {
			t.Fatalf("work on an empty project: %v", r)
		}
	})
	t.Run("OKLoop", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "OKLoop")
		a := e.item("first")
		b := e.item("second", a.ID)
		c := e.item("third", b.ID)
		r := e.run(e.agentToken, nil, "work", "--loop", "--json", "--", "sh", "-c", `echo "$WORKGRAPH_ITEM_TITLE"`)
		if r.code != 0 {
			t.Fatalf("work --loop: %v", r)
		}
		for _, it := range []*client.Item{a, b, c} {
			if got := e.get(it.ID); got.State != client.StateDone {
				t.Fatalf("%s: state %s\n%v", it.Title, got.State, r)
			}
		}
		if n := strings.Count(r.stdout, `"outcome":"completed"`); n != 3 {
			t.Fatalf("%d completed reports in --json output:\n%s", n, r.stdout)
		}
	})
	t.Run("OKJSONStdoutOnlyReports", func(t *testing.T) {
		// With --json stdout is the supervisor's JSON lines only: the
		// command's own output goes to stderr, so a machine reader needs
		// to skip nothing.
		t.Parallel()
		e := srv.inProject(t, "OKJSONStdoutOnlyReports")
		e.item("say something")
		r := e.run(e.agentToken, nil, "work", "--json", "--", "sh", "-c", `echo "not json: $WORKGRAPH_ITEM_TITLE"`)
		if r.code != 0 {
			t.Fatalf("work --json: %v", r)
		}
		lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Fatalf("a line of work --json's stdout is not JSON: %q\n%v", l, r)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], `"outcome":"completed"`) {
			t.Fatalf("stdout = %q, want the one report", r.stdout)
		}
		if !strings.Contains(r.stderr, "not json: say something") {
			t.Fatalf("the command's output is not on stderr: %v", r)
		}
	})
	t.Run("ErrCommandNotFound", func(t *testing.T) {
		t.Parallel()
		e := srv.inProject(t, "ErrCommandNotFound")
		it := e.item("no such program")
		r := e.run(e.agentToken, nil, "work", "--", "/nonexistent/agent")
		if r.code != 2 || !strings.Contains(r.stderr, "cannot start /nonexistent/agent") {
			t.Fatalf("work: %v", r)
		}
		// Refused before the claim: a typo in the command takes no item
		// (it used to claim one and release it, a lease and its events
		// for nothing, each run).
		if ls := e.leases(it.ID); len(ls) != 0 {
			t.Fatalf("leases = %+v, want none: the command was refused before any claim", ls)
		}
	})
	t.Run("ErrCommandNotExecutable", func(t *testing.T) {
		t.Parallel()
		// The README's `workgraph work -- ./agent.sh` with a script saved
		// without its execute bit: the message says how to run it.
		e := srv.inProject(t, "ErrCommandNotExecutable")
		it := e.item("a script without +x")
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "agent.sh"), []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c := e.cmd(e.agentToken, nil, "work", "--", "./agent.sh")
		c.Dir = dir
		out, _ := c.CombinedOutput()
		if code := c.ProcessState.ExitCode(); code != 2 {
			t.Fatalf("work: exit %d\n%s", code, out)
		}
		if !strings.Contains(string(out), "permission denied (make it executable: chmod +x ./agent.sh; or name its interpreter: workgraph work -- sh ./agent.sh)") {
			t.Fatalf("the message does not say how to run the script:\n%s", out)
		}
		// Named without "./", as a program on PATH: the message names it with its path.
		c = e.cmd(e.agentToken, nil, "work", "--", "agent.sh")
		c.Dir = dir
		out, _ = c.CombinedOutput()
		if code := c.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "workgraph work -- ./agent.sh)") {
			t.Fatalf("work -- agent.sh: exit %d, want 2 and a hint to name it ./agent.sh\n%s", code, out)
		}
		// Both refused before the claim: the item was never taken.
		if ls := e.leases(it.ID); len(ls) != 0 {
			t.Fatalf("leases = %+v, want none: the command was refused before any claim", ls)
		}
	})
}

// TestWorkLeaseLost: the supervisor is frozen (test hook: no heartbeats)
// past its 2 s lease, another worker takes the item over, the supervisor
// thaws: its next heartbeat is refused, and it kills the command within
// seconds, reports nothing for the item and exits 4.
func TestWorkLeaseLost(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it := e.item("a long task")
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	pidFile := filepath.Join(dir, "pid")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sup := e.cmd(e.agentToken, []string{"WORKGRAPH_TEST_HEARTBEAT_GATE=" + gate, "PIDFILE=" + pidFile},
		"work", "--lease", "2s", "--grace", "3s", "--", "sh", "-c", `echo $$ > "$PIDFILE"; exec sleep 300`)
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

	var pid int
	eventually(t, 10*time.Second, "the command to start", func() bool {
		data, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	})
	first := e.get(it.ID)
	if first.State != client.StateLeased || first.Epoch != 1 {
		t.Fatalf("item = %+v", first)
	}

	// The lease runs out by the database clock; another worker claims.
	var thief *client.Claim
	eventually(t, 20*time.Second, "another worker to take the item over", func() bool {
		cl, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "thief", LeaseSeconds: 120, WaitSeconds: 1})
		if err != nil && !errors.Is(err, client.ErrNothingReady) {
			t.Fatalf("claim: %v", err)
		}
		thief = cl
		return cl != nil
	})
	if thief.Item.ID != it.ID || thief.Lease.Epoch != 2 {
		t.Fatalf("thief claimed %+v", thief.Lease)
	}

	// Thaw the supervisor: its next heartbeat is refused.
	thawed := time.Now()
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("the supervisor did not stop within 15 s of losing its lease\n%s", stderr.String())
	}
	if took := time.Since(thawed); took > 5*time.Second {
		t.Fatalf("the supervisor took %s to stop the command", took)
	}
	if code := sup.ProcessState.ExitCode(); code != 4 {
		t.Fatalf("exit = %d, want 4\n%s", code, stderr.String())
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the command (pid %d) still runs: kill(0) = %v", pid, err)
	}
	if !strings.Contains(stderr.String(), "lease lost") {
		t.Fatalf("stderr does not say the lease was lost:\n%s", stderr.String())
	}

	// The stored state is exactly the thief's: its lease holds the item,
	// the first lease ended expired, and the thief can go on.
	now := e.get(it.ID)
	if now.State != client.StateLeased || now.Epoch != 2 || now.ActiveLeaseID == nil || *now.ActiveLeaseID != thief.Lease.ID {
		t.Fatalf("item after take-over = %+v", now)
	}
	ls := e.leases(it.ID)
	if len(ls) != 2 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeExpired || ls[1].EndedAt != nil {
		t.Fatalf("leases = %+v", ls)
	}
	if _, err := e.agent.Complete(ctx, thief.Lease.ID, client.CompleteRequest{Epoch: 2, Result: json.RawMessage(`{"by":"thief"}`)}); err != nil {
		t.Fatalf("the thief's completion: %v", err)
	}
}

// TestWorkAsk: the command asks a person (blocking) with `workgraph ask`;
// the supervisor stops quietly without failing the item, and the next
// claim carries the answer.
func TestWorkAsk(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it := e.item("needs a decision")
	// The command does not exit after asking: the supervisor stops it after
	// the grace period.
	start := time.Now()
	r := e.run(e.agentToken, nil, "work", "--grace", "1s", "--", "sh", "-c",
		`"$WORKGRAPH_BIN" ask "Postgres or SQLite?" --suggest Postgres --suggest SQLite && sleep 30`)
	if r.code != 0 {
		t.Fatalf("work: %v", r)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("the supervisor took %s to stop a command that asked", took)
	}
	if !strings.Contains(r.stderr, "waits for a person") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	ls := e.leases(it.ID)
	if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeAttentionRequested {
		t.Fatalf("leases = %+v", ls)
	}
	if got := e.get(it.ID); got.State != client.StateAttention {
		t.Fatalf("state = %s, want attention", got.State)
	}

	// A person answers through the CLI; the same worker gets the item back
	// with the answer.
	ls2 := e.run(e.humanToken, nil, "attention", "ls", "--json")
	var page client.AttentionPage
	if err := json.Unmarshal([]byte(ls2.stdout), &page); err != nil || len(page.Attention) != 1 {
		t.Fatalf("attention ls: %v (%v)", ls2, err)
	}
	if r := e.run(e.humanToken, nil, "attention", "resolve", page.Attention[0].ID, "Postgres"); r.code != 0 {
		t.Fatalf("resolve: %v", r)
	}
	cl, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "e2e-worker"})
	if err != nil {
		t.Fatalf("claim after the answer: %v", err)
	}
	if cl.Item.ID != it.ID || len(cl.Attention) != 1 || cl.Attention[0].Answer == nil || *cl.Attention[0].Answer != "Postgres" {
		t.Fatalf("claim = %+v, attention = %+v", cl.Item, cl.Attention)
	}
}

// TestWorkStopRequested: a person asks the worker to stop; the supervisor
// stops the command and releases the item.
func TestWorkStopRequested(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	it := e.item("stop me")
	sup := e.cmd(e.agentToken, nil, "work", "--lease", "3s", "--", "sleep", "300")
	var stderr bytes.Buffer
	sup.Stderr = &stderr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { sup.Wait(); close(exited) }()
	var leaseID string
	eventually(t, 10*time.Second, "the item to be leased", func() bool {
		got := e.get(it.ID)
		if got.ActiveLeaseID != nil {
			leaseID = *got.ActiveLeaseID
		}
		return leaseID != ""
	})
	if _, err := e.human.RequestStop(ctx, leaseID, "wrong approach"); err != nil {
		t.Fatalf("request stop: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		sup.Process.Kill()
		t.Fatalf("the supervisor did not stop\n%s", stderr.String())
	}
	if code := sup.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit = %d\n%s", code, stderr.String())
	}
	// The person's reason reaches the supervisor, which says it.
	if !strings.Contains(stderr.String(), "wrong approach") {
		t.Fatalf("the supervisor did not say why it stopped:\n%s", stderr.String())
	}
	ls := e.leases(it.ID)
	if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeReleased {
		t.Fatalf("leases = %+v\n%s", ls, stderr.String())
	}
}

// TestWorkSaysWhyNothing: a supervisor that finds nothing to run says why
// the project's ready items were not its own (here an item kept for the
// worker that asked a person about it): once (exit 3), in a loop that
// handled nothing (exit 0), one slot or several.
func TestWorkSaysWhyNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	kept := e.item("Kept for its asker")
	asked := e.claimAndAsk("w1", "Which one?")
	if r := e.run(e.humanToken, nil, "attention", "resolve", asked.ID, "this one"); r.code != 0 {
		t.Fatalf("resolve: %v", r)
	}
	defer func() {
		// None of the runs took the item: its one lease is still w1's ask.
		if ls := e.leases(kept.ID); len(ls) != 1 || ls[0].Worker != "w1" {
			t.Errorf("leases of the kept item: %+v, want only w1's", ls)
		}
	}()
	cmd := []string{"--", "sh", "-c", "exit 0"}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"work", "--worker", "w2"}, 3},
		{[]string{"work", "--worker", "w2", "--loop"}, 0},
		{[]string{"work", "--worker", "w2", "--concurrency", "2"}, 3},
		{[]string{"work", "--worker", "w2", "--loop", "--concurrency", "2"}, 0},
	} {
		r := e.run(e.agentToken, nil, append(c.args, cmd...)...)
		if r.code != c.code || !strings.Contains(r.stderr, "why: 1 ready item is kept for the worker that asked a person") || !strings.Contains(r.stderr, `worker "w1"`) {
			t.Errorf("%s: want exit %d and why the item is not w2's\n%v", strings.Join(c.args, " "), c.code, r)
		}
	}
}

// TestClaimSaysBackoff: after a failure the item waits out a retry
// backoff; a claim that finds nothing says so, naming the item and until
// when, rather than leaving the person to guess.
func TestClaimSaysBackoff(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("Fails once")
	if r := e.run(e.agentToken, nil, "work", "--worker", "w1", "--", "sh", "-c", "exit 3"); r.code != 1 {
		t.Fatalf("work with a failing command: %v", r)
	}
	if got := e.get(it.ID); got.State != client.StateBlocked || got.BlockedBy.RetryAfter == nil {
		t.Fatalf("after the failure the item is %s (retry after %v), want blocked by a backoff", got.State, got.BlockedBy.RetryAfter)
	}
	r := e.wantExit(e.agentToken, 3, "nothing is ready for this claim", "claim", "--worker", "w1")
	if !strings.Contains(r.stderr, "why: 1 item this claim could take waits out a retry backoff after a failure") || !strings.Contains(r.stderr, it.ID[:8]) {
		t.Fatalf("the claim should name the backoff:\n%v", r)
	}
}

// TestWorkSaysAfterFailure: the supervisor says what a failure leaves:
// a retry and when, or, at the project's failure limit, a question to a
// person (not "will be retried").
func TestWorkSaysAfterFailure(t *testing.T) {
	t.Parallel()
	fail := []string{"work", "--worker", "w1", "--", "sh", "-c", "exit 3"}
	e := setup(t)
	e.item("Fails once")
	r := e.run(e.agentToken, nil, fail...)
	if r.code != 1 || !strings.Contains(r.stderr, "reported failed; it will be retried after ") {
		t.Fatalf("a first failure should say when it is retried:\n%v", r)
	}

	limited := setupWith(t, func(c *server.Config) { c.Lease.MaxFailures = 1 })
	it := limited.item("Fails for good")
	r = limited.run(limited.agentToken, nil, fail...)
	if r.code != 1 || !strings.Contains(r.stderr, "reported failed; it now waits for a person: it failed as often in a row as the project allows") ||
		strings.Contains(r.stderr, "will be retried") {
		t.Fatalf("a failure at the limit should say a person is asked:\n%v", r)
	}
	if got := limited.get(it.ID); got.State != client.StateAttention {
		t.Fatalf("after the limit the item is %s, want attention", got.State)
	}
}
