package mcp

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxToolsListTokens is the budget for tools/list: what an agent pays in
// context before doing anything.
const maxToolsListTokens = 2000

// TestToolsListSize measures the tools/list answer (JSON bytes, and tokens
// estimated as bytes/4) and fails above the budget.
func TestToolsListSize(t *testing.T) {
	t.Parallel()
	srv := newServer(Config{}, nil)
	cs := connectInMemory(t, srv)

	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if len(res.Tools) != 11 {
		t.Errorf("tools: got %d, want 11", len(res.Tools))
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	tokens := len(b) / 4
	t.Logf("tools/list: %d tools, %d bytes, ~%d tokens (budget %d)", len(res.Tools), len(b), tokens, maxToolsListTokens)
	if tokens > maxToolsListTokens {
		t.Errorf("tools/list is ~%d tokens, over the budget of %d", tokens, maxToolsListTokens)
	}
}

// connectInMemory connects an SDK client to srv over an in-memory
// transport and closes both ends when the test ends.
func connectInMemory(t *testing.T, srv *Server) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
		srv.Close()
	})
	return cs
}
