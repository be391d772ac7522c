package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workgraph-dev/workgraph/buildinfo"
	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/server"
	"github.com/workgraph-dev/workgraph/server/servertest"
)

// TestMCPCommandStdio runs `workgraph mcp` on pipes against a real server
// and drives it with the SDK's client: the stdio wiring, flags and exit.
func TestMCPCommandStdio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const secret = "wg-cli-mcp-test-bootstrap"
	srv := servertest.Start(t, server.Config{BootstrapToken: secret})
	admin, err := client.New(srv.URL(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateProject(ctx, "mcp-cli"); err != nil {
		t.Fatalf("create project: %v", err)
	}
	tok, err := admin.CreateToken(ctx, "mcp-cli", client.CreateTokenRequest{Name: "agent", Role: "agent"})
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	it, err := admin.CreateItem(ctx, "mcp-cli", client.CreateItemRequest{Title: "over stdio"})
	if err != nil {
		t.Fatalf("create item: %v", err)
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr servertest.SyncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- Main([]string{"mcp", "--url", srv.URL(), "--token", tok.Secret, "--project", "mcp-cli", "--worker", "cli-agent"},
			IO{In: inR, Out: outW, Err: &stderr})
		outW.Close()
	}()

	c := sdk.NewClient(&sdk.Implementation{Name: "cli-test", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, stderr.String())
	}
	// serverInfo names the build (workgraph version's short form).
	if info := cs.InitializeResult().ServerInfo; info.Name != "workgraph" || info.Version != buildinfo.Get().Short() {
		t.Fatalf("serverInfo %+v, want workgraph %q", info, buildinfo.Get().Short())
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "take_task", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("take_task: %+v, %v (stderr: %s)", res, err, stderr.String())
	}
	if txt := res.Content[len(res.Content)-1].(*sdk.TextContent).Text; !strings.Contains(txt, it.ID) {
		t.Fatalf("take_task answered %s, want item %s", txt, it.ID)
	}
	ls, err := admin.ItemLeases(ctx, "mcp-cli", it.ID)
	if err != nil || len(ls) != 1 || ls[0].Worker != "cli-agent" {
		t.Fatalf("leases %+v, %v: want one of worker cli-agent", ls, err)
	}

	// Closing the client ends the session: the command releases the task
	// and exits 0.
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != ExitOK {
			t.Fatalf("exit code %d, want 0 (stderr: %s)", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("workgraph mcp did not exit after the client closed")
	}
	got, err := admin.GetItem(ctx, "mcp-cli", it.ID)
	if err != nil || got.State != client.StateReady {
		t.Fatalf("item after the session ended: %+v, %v; want ready (released)", got, err)
	}
}

// TestMCPStdioAnswersBeforeEOF: requests piped in at once, with the input
// closed right after them (`printf ... | workgraph mcp`), are each answered
// before the command exits; it used to end the session at the end of its
// input and drop the answers still being worked on.
func TestMCPStdioAnswersBeforeEOF(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const secret = "wg-cli-mcp-eof-bootstrap"
	srv := servertest.Start(t, server.Config{BootstrapToken: secret})
	admin, err := client.New(srv.URL(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateProject(ctx, "mcp-eof"); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.CreateToken(ctx, "mcp-eof", client.CreateTokenRequest{Name: "agent", Role: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateItem(ctx, "mcp-eof", client.CreateItemRequest{Title: "piped"}); err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"take_task","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n"
	var out, stderr servertest.SyncBuffer
	code := Main([]string{"mcp", "--url", srv.URL(), "--token", tok.Secret, "--project", "mcp-eof", "--worker", "piped"},
		IO{In: strings.NewReader(in), Out: &out, Err: &stderr})
	if code != ExitOK {
		t.Fatalf("exit %d (stderr: %s)", code, stderr.String())
	}
	answered := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID    *float64        `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		if m.ID != nil && m.Error == nil {
			answered[*m.ID] = true
		}
	}
	for _, id := range []float64{1, 2, 3} {
		if !answered[id] {
			t.Errorf("request %v was not answered; output:\n%s\nstderr: %s", id, out.String(), stderr.String())
		}
	}
}

// TestMCPCommandRefusesFlags: out-of-range flags exit 2 before anything
// starts; above all an --http address that is not loopback, where the
// endpoint (which asks for no credentials) would let anyone who reaches
// it act with the token, unless --allow-remote says so.
func TestMCPCommandRefusesFlags(t *testing.T) {
	t.Parallel()
	// run runs `workgraph mcp args` until it ends or serves (then it is
	// stopped): its error, and whether it served.
	run := func(args ...string) (err error, served bool, stderr string) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var errb servertest.SyncBuffer
		done := make(chan error, 1)
		go func() {
			cmd := newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: &errb})
			cmd.SetArgs(append([]string{"mcp", "--url", "http://127.0.0.1:1", "--token", "x"}, args...))
			done <- cmd.ExecuteContext(ctx)
		}()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case err := <-done:
				return err, false, errb.String()
			case <-deadline:
				t.Fatalf("mcp %q neither ended nor served: %s", args, errb.String())
			case <-time.After(20 * time.Millisecond):
			}
			if strings.Contains(errb.String(), "workgraph MCP endpoint") {
				cancel()
				<-done
				return nil, true, errb.String()
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:0"}, "is not a loopback address"},
		{[]string{"--http", ":0"}, "is not a loopback address"},
		{[]string{"--http", "192.0.2.1:0"}, "is not a loopback address"},
		{[]string{"--lease-seconds", "-5"}, "must not be negative"},
		{[]string{"--retries", "-1"}, `"-1" is not a whole number of retries`},
		{[]string{"--http", "127.0.0.1:0", "--session-timeout", "-1s"}, "must not be negative"},
	} {
		err, served, stderr := run(c.args...)
		var ee *exitError
		if served || !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mcp %q: served %v, err %v (%s); want exit %d and %q", c.args, served, err, stderr, ExitUsage, c.want)
		}
	}
	// Loopback, or another address with --allow-remote, is served.
	for _, args := range [][]string{{"--http", "127.0.0.1:0"}, {"--http", "0.0.0.0:0", "--allow-remote"}} {
		if err, served, stderr := run(args...); !served {
			t.Errorf("mcp %q did not serve: %v (%s)", args, err, stderr)
		}
	}
}
