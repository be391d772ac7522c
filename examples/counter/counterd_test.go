//go:build linux

package counter_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/workgraph-dev/workgraph/fence"
	"github.com/workgraph-dev/workgraph/internal/testbin"
)

// TestCounterd runs the example's binary as an operator would: its own
// database, the keys fetched from a real server's well-known URL; a
// claim's token is admitted, an older epoch's is refused.
func TestCounterd(t *testing.T) {
	t.Parallel()
	r := newSeedRun(t)
	bin, err := testbin.Build("github.com/workgraph-dev/workgraph/examples/counter/cmd/counterd")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"COUNTER_DATABASE_URL="+r.destURL,
		fence.EnvKeysURL+"="+r.srv.URL()+fence.KeysPath,
		"COUNTER_PROJECT_ID="+r.project.ID,
		"COUNTER_ADDR=127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	listening := regexp.MustCompile(`counterd listening"? addr=(\S+)`)
	sc := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && sc.Scan() {
		t.Logf("counterd: %s", sc.Text())
		if m := listening.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("counterd exited without listening (%v)", cmd.Wait())
	}
	go func() {
		for sc.Scan() {
		}
	}()

	r.dest = "http://" + addr
	r.startA("fence", r.dest) // worker A holds epoch 1, stopped
	cl := r.reclaim()
	wantAnswer(t, "B", r.bAdds(cl, true, "", seedUnits), http.StatusOK, "", false)
	wantA(t, r.resumeA(), http.StatusConflict, fence.CodeFenceStale, false)
	r.finish(cl, 4, fence.Mark{HighWater: 2})
}
