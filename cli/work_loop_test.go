package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/server/servertest"
)

// TestWorkLoopOutlivesOutage: `work --loop --wait` runs until interrupted,
// so a claim that cannot reach the server is tried again (it used to end
// the supervisor with exit 8, and a fleet with it, when the server was
// restarted); without --wait the supervisor still exits.
func TestWorkLoopOutlivesOutage(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1; one try per call keeps the test short.
	stdio := func(errb io.Writer) IO {
		return IO{In: strings.NewReader(""), Out: io.Discard, Err: errb, clientOptions: []client.Option{client.WithRetries(1)}}
	}
	base := []string{"work", "--url", "http://127.0.0.1:1", "--token", "x", "--project", "p"}
	for _, args := range [][]string{{"--loop", "--wait", "1s"}, {"--loop", "--wait", "1s", "--concurrency", "2"}} {
		ctx, cancel := context.WithCancel(context.Background())
		var errb servertest.SyncBuffer
		done := make(chan error, 1)
		go func() {
			cmd := newRoot(stdio(&errb))
			cmd.SetArgs(append(append(append([]string{}, base...), args...), "--", "true"))
			done <- cmd.ExecuteContext(ctx)
		}()
		deadline := time.After(20 * time.Second)
		for !strings.Contains(errb.String(), "claiming again") {
			select {
			case err := <-done:
				cancel()
				t.Fatalf("work %q ended: %v\n%s", args, err, errb.String())
			case <-deadline:
				cancel()
				t.Fatalf("work %q: no retry of the claim\n%s", args, errb.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
		cancel()
		var ee *exitError
		if err := <-done; !errors.As(err, &ee) || ee.code != ExitInterrupted {
			t.Fatalf("work %q interrupted: %v, want exit %d", args, err, ExitInterrupted)
		}
	}
	var errb servertest.SyncBuffer
	if code := Main(append(append([]string{}, base...), "--loop", "--", "true"), stdio(&errb)); code != ExitUnavailable {
		t.Fatalf("work --loop without --wait: exit %d, want %d\n%s", code, ExitUnavailable, errb.String())
	}
}
