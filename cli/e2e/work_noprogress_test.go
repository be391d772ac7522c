package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/server"
)

// TestWorkNoProgress: a wedged command under `workgraph work` (it prints a
// line, then sleeps) keeps its supervisor heartbeating, but its progress
// stops changing; the project's no-progress policy ends its lease with a
// no_progress request. The supervisor must take that for what it is, a
// lost lease: it stops the command at once and exits 4, saying the
// no-progress policy ended it, not that the command asked a question
// (which would wait out the grace period for the command to exit by
// itself, and exit 0).
func TestWorkNoProgress(t *testing.T) {
	t.Parallel()
	e := setupWith(t, func(c *server.Config) { c.SweepInterval = 100 * time.Millisecond })
	ctx := context.Background()
	if _, err := e.admin.UpdateProject(ctx, e.project, client.UpdateProjectRequest{
		QuietAfterSeconds: ptr(int64(1)), NoProgressAfterSeconds: ptr(int64(1)),
	}); err != nil {
		t.Fatal(err)
	}
	it := e.item("wedged")
	c := e.cmd(e.agentToken, nil, "work", "--lease", "3s", "--grace", "30s", "--", "sh", "-c", "echo started; exec sleep 300")
	c.Dir = t.TempDir()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	start := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(25 * time.Second):
		_ = c.Process.Kill()
		<-done
		t.Fatalf("work still running after 25 s (the grace period is 30 s): %s", errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	if code != 4 || !strings.Contains(errb.String(), "no-progress") || strings.Contains(errb.String(), "asked a question") {
		t.Fatalf("work exited %d after %v, stderr:\n%s\nwant exit 4 naming the no-progress policy", code, time.Since(start), errb.String())
	}
	reqs, err := e.human.ListAttention(ctx, e.project, client.ListAttentionOptions{ItemID: it.ID, State: "open"})
	if err != nil || len(reqs.Attention) != 1 || reqs.Attention[0].Reason != "no_progress" {
		t.Fatalf("open requests on the item: %+v (%v), want one no_progress request", reqs, err)
	}
}

func ptr[T any](v T) *T { return &v }
