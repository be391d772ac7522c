package e2e

import (
	"bufio"
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

// TestServeJSONFirstStart: with --log-format json the first start's admin
// token and the demo project's token are each shown as one JSON object of
// their own on standard error (the token under "token", its project and
// address beside it), whatever the log level, not as a plain-text block in
// the middle of the JSON lines; and each token works.
func TestServeJSONFirstStart(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--database-url", dbtest.URL(t), "--addr", addr, "--log-format", "json", "--log-level", "error", "--demo")
	cmd.Env = []string{"HOME=" + t.TempDir()}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var out []string
	tokens := map[string]string{} // project -> token
	deadline := time.After(time.Minute)
	for len(tokens) < 2 {
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-deadline:
		}
		if !ok {
			t.Fatalf("want one JSON line with the token of project default and one of demo, got %v:\n%s", tokens, strings.Join(out, "\n"))
		}
		out = append(out, line)
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("a line that is not a JSON object: %q\n%s", line, strings.Join(out, "\n"))
		}
		if tok, ok := obj["token"].(string); ok {
			p, _ := obj["project"].(string)
			ui, _ := obj["ui"].(string)
			if p == "" || !strings.HasPrefix(ui, "http://"+addr+"/") || obj["msg"] == nil || obj["level"] == nil {
				t.Errorf("a token line without its project, address, level or msg: %q", line)
			}
			tokens[p] = tok
		}
	}
	for p, tok := range tokens {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/projects/"+p, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("the token shown for project %q: %d", p, res.StatusCode)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for line := range lines {
		if !json.Valid([]byte(line)) {
			t.Errorf("a line that is not a JSON object: %q", line)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v", err)
	}
}
