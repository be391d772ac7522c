package mcp

import (
	"context"
	"testing"

	wgfence "github.com/workgraph-dev/workgraph/fence"
)

// TestTakeTaskHandsOnTheFence: an MCP agent gets what a CLI worker gets
// to fence the systems it changes (docs/agents.md, "Fencing your
// effects"): take_task answers the lease's fence token, which verifies
// with the server's published keys for the task taken, the operation id
// prefix and the URL of the keys.
func TestTakeTaskHandsOnTheFence(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cs := connectInMemory(t, e.mcpServer(t, Config{}))
	var created taskRef
	ok(t, cs, "create_task", map[string]any{"title": "deploy"}, &created)
	var took task
	ok(t, cs, "take_task", nil, &took)
	if took.Fence == nil {
		t.Fatalf("take_task answered no fence: %+v", took)
	}
	ks := &wgfence.KeySet{URL: took.Fence.KeysURL}
	c, err := ks.Verify(context.Background(), took.Fence.Token)
	if err != nil || c.Item != created.ID || c.Epoch != 1 {
		t.Fatalf("fence token %q (keys %s): %+v, %v", took.Fence.Token, took.Fence.KeysURL, c, err)
	}
	if took.Fence.OperationPrefix != created.ID+"/" {
		t.Errorf("operation prefix %q, want %q", took.Fence.OperationPrefix, created.ID+"/")
	}
	var shown task
	ok(t, cs, "show_task", map[string]any{"task_id": created.ID}, &shown)
	if shown.Fence != nil {
		t.Errorf("show_task answered a fence token: only the holder's take_task does")
	}
}
