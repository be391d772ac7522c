package mcp

import (
	"net"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
)

// TestToolErrorsSayWhatToDo: the failures every tool meets alike when the
// MCP server was started wrong say so in words an agent can pass on, not
// as a transport error naming the request.
func TestToolErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()

	t.Run("ErrServerUnreachable", func(t *testing.T) {
		t.Parallel()
		// A port nothing listens on: take one, then close it.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + l.Addr().String()
		l.Close()
		c, err := client.New(url, "wg_unused", client.WithRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(Config{Client: c, Project: "default", Worker: "mcp-agent"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		cs := connectInMemory(t, srv)
		msg := toolErr(t, cs, "take_task", nil)
		for _, want := range []string{"unavailable: cannot reach the workgraph server at " + url, "connection refused", "WORKGRAPH_URL"} {
			if !strings.Contains(msg, want) {
				t.Errorf("take_task with no server: %q lacks %q", msg, want)
			}
		}
		if strings.Contains(msg, "dial tcp") || strings.Contains(msg, "POST /v1/") {
			t.Errorf("take_task with no server answers the transport's words: %q", msg)
		}
	})

	t.Run("ErrProjectNotFound", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		srv, err := New(Config{Client: e.agent, Project: "no-such-project", Worker: "mcp-agent"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		cs := connectInMemory(t, srv)
		msg := toolErr(t, cs, "take_task", nil)
		if !strings.Contains(msg, `not_found: project "no-such-project" not found`) || !strings.Contains(msg, "WORKGRAPH_PROJECT") {
			t.Errorf("take_task in a project that does not exist: %q", msg)
		}
	})
}

// TestLostWhyEpochMismatch: a lease_lost for an epoch the lease was not
// granted at (a lease id and an epoch of different claims) is not said to
// be a take-over by another worker: the session sent its claim's epoch,
// and a lease keeps it.
func TestLostWhyEpochMismatch(t *testing.T) {
	t.Parallel()
	why := lostWhy(&client.Error{Code: client.CodeLeaseLost, Detail: "lease l was not granted at this epoch"})
	if strings.Contains(why, "another worker") || !strings.Contains(why, "nothing was changed") {
		t.Fatalf("lostWhy = %q: want no take-over, and that nothing was changed", why)
	}
}
