package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestWorkLostSaysWhy: a person cancels the item while the supervisor's
// command runs. The supervisor stops the command and exits 4 saying that
// the item was cancelled, not that the lease was "taken over or expired"
// (the server's refusal names the lease's end).
func TestWorkLostSaysWhy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("cancelled while it runs")
	sup := e.cmd(e.agentToken, nil, "work", "--lease", "3s", "--grace", "1s", "--", "sleep", "300")
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
	eventually(t, 10*time.Second, "the item to be leased", func() bool {
		return e.get(it.ID).ActiveLeaseID != nil
	})
	if _, err := e.human.CancelItem(context.Background(), e.project, it.ID, "not needed"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the supervisor did not stop after the cancellation\n%s", stderr.String())
	}
	if code := sup.ProcessState.ExitCode(); code != 4 {
		t.Fatalf("exit = %d, want 4\n%s", code, stderr.String())
	}
	out := stderr.String()
	if !strings.Contains(out, "lease lost on item "+it.ID) || !strings.Contains(out, "the item was cancelled") {
		t.Fatalf("stderr does not say that the item was cancelled:\n%s", out)
	}
	if strings.Contains(out, "taken over or expired") {
		t.Fatalf("stderr guesses a take-over or an expiry for a cancelled item:\n%s", out)
	}
}
