package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
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
	exited := startSupervisor(t, sup)
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

// TestWorkInterruptedSaysReleased: Ctrl-C (SIGINT) stops the command and
// releases the item; the supervisor says so, and --json prints the run's
// outcome as for any other ending, before it exits 130.
func TestWorkInterruptedSaysReleased(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("interrupted while it runs")
	sup := e.cmd(e.agentToken, nil, "work", "--json", "--grace", "1s", "--", "sleep", "300")
	var stdout, stderr bytes.Buffer
	sup.Stdout, sup.Stderr = &stdout, &stderr
	exited := startSupervisor(t, sup)
	eventually(t, 10*time.Second, "the item to be leased", func() bool {
		return e.get(it.ID).ActiveLeaseID != nil
	})
	if err := sup.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the supervisor did not stop after SIGINT\n%s", stderr.String())
	}
	if code := sup.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit = %d, want 130\n%s", code, stderr.String())
	}
	ls := e.leases(it.ID)
	if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeReleased {
		t.Fatalf("leases = %+v, want one released", ls)
	}
	if !strings.Contains(stderr.String(), "interrupted; item "+it.ID+" released") {
		t.Errorf("stderr does not say the item was released:\n%s", stderr.String())
	}
	var out struct {
		ItemID  string `json:"item_id"`
		Outcome string `json:"outcome"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.ItemID != it.ID || out.Outcome != "interrupted" || !strings.Contains(out.Message, "released") {
		t.Errorf("--json printed %q (%v), want the interrupted run's outcome", stdout.String(), err)
	}
}

// TestWorkInterruptedWhileClaiming: the supervisor is interrupted after
// the server granted its claim but before the answer reached it (a proxy
// holds the answer back). It still reads the answer, releases the item
// without starting the command, and exits 130: the lease is not left live
// for nobody until it expires.
func TestWorkInterruptedWhileClaiming(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("interrupted while its claim is answered")
	target, err := url.Parse(e.url)
	if err != nil {
		t.Fatal(err)
	}
	granted, answer := make(chan struct{}), make(chan struct{})
	var once sync.Once
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(res *http.Response) error {
		if res.Request.Method == http.MethodPost && strings.HasSuffix(res.Request.URL.Path, "/claims") &&
			res.StatusCode == http.StatusCreated {
			once.Do(func() { close(granted) })
			select {
			case <-answer:
			case <-time.After(time.Minute):
			}
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	sup := e.cmd(e.agentToken, []string{"WORKGRAPH_URL=" + front.URL}, "work", "--grace", "1s", "--", "sleep", "300")
	var stderr bytes.Buffer
	sup.Stderr = &stderr
	exited := startSupervisor(t, sup)
	select {
	case <-granted:
	case <-time.After(20 * time.Second):
		t.Fatalf("no claim was granted\n%s", stderr.String())
	}
	if err := sup.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The interruption reaches the supervisor before the answer does.
	time.Sleep(200 * time.Millisecond)
	close(answer)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the supervisor did not stop after SIGINT\n%s", stderr.String())
	}
	if code := sup.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit = %d, want 130\n%s", code, stderr.String())
	}
	ls := e.leases(it.ID)
	if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeReleased {
		t.Fatalf("leases = %+v, want one released\n%s", ls, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted; item "+it.ID+" released") {
		t.Errorf("stderr does not say the item was released:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "running sleep") {
		t.Errorf("the command was started after the interruption:\n%s", stderr.String())
	}
}

// startSupervisor starts sup in the background and returns a channel closed
// once it has exited (its ProcessState is then set); a supervisor still
// running when the test ends is killed.
func startSupervisor(t *testing.T, sup *exec.Cmd) <-chan struct{} {
	t.Helper()
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
	return exited
}
