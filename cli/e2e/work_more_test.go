package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
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
