package e2e

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/db/dbtest"
)

// TestServeJSONLogsOnly: with --log-format json every line the server
// writes is one JSON object, including what the tracing exporter reports
// when the collector cannot be reached (it used to print a plain
// "traces export: ..." line of Go's log package into the JSON stream,
// which a log shipper parsing JSON lines rejects or misfiles).
func TestServeJSONLogsOnly(t *testing.T) {
	t.Parallel()
	// A collector address nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	collector := l.Addr().String()
	l.Close()
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", "--database-url", dbtest.URL(t), "--addr", addr,
		"--bootstrap-token", adminToken, "--log-format", "json")
	cmd.Env = []string{"HOME=" + t.TempDir(),
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + collector,
		"OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_EXPORTER_OTLP_TIMEOUT=2000"}
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	eventually(t, time.Minute, "the server to be ready", func() bool {
		res, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	// A traced request: its span is exported (and fails) at the latest
	// when the server flushes on its way out.
	res, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}

	out := logs.String()
	if !strings.Contains(out, collector) {
		t.Fatalf("no line reports the failed export to %s:\n%s", collector, out)
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Errorf("a line that is not a JSON object: %q", line)
			continue
		}
		if obj["level"] == nil || obj["msg"] == nil {
			t.Errorf("a line without level or msg: %q", line)
		}
	}
}
