package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/fence"
)

// TestFence: `workgraph fence key` prints the key the server publishes,
// and `workgraph work` hands its command a fence token that verifies with
// it offline, the operation id prefix and the URL of the keys.
func TestFence(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.run(e.agentToken, nil, "fence", "key")
	if r.code != 0 {
		t.Fatalf("fence key: %v", r)
	}
	printed, err := fence.ParsePublicKey(r.stdout)
	if err != nil {
		t.Fatalf("fence key printed %q: %v", r.stdout, err)
	}
	res, err := http.Get(e.url + fence.KeysPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(res.Body)
	res.Body.Close()
	served, err := fence.ParseKeys(doc)
	if err != nil || len(served) != 1 || !served[0].Equal(printed) {
		t.Fatalf("%s serves %s (%v); fence key printed %q", fence.KeysPath, doc, err, r.stdout)
	}

	it := e.item("fenced work")
	r = e.run(e.agentToken, nil, "work", "--", "sh", "-c",
		`printf '{"fence": "%s", "prefix": "%s", "keys": "%s"}' "$WORKGRAPH_FENCE" "$WORKGRAPH_OPERATION_PREFIX" "$WORKGRAPH_FENCE_KEYS_URL" > "$WORKGRAPH_RESULT_FILE"`)
	if r.code != 0 {
		t.Fatalf("work: %v", r)
	}
	var got struct{ Fence, Prefix, Keys string }
	if err := json.Unmarshal(e.get(it.ID).Result, &got); err != nil {
		t.Fatal(err)
	}
	c, err := fence.Verify(served, got.Fence)
	if err != nil || c.Item != it.ID || c.Epoch != 1 || c.Lease == "" {
		t.Fatalf("WORKGRAPH_FENCE %q: %+v, %v", got.Fence, c, err)
	}
	if got.Prefix != it.ID+"/" || got.Keys != strings.TrimRight(e.url, "/")+fence.KeysPath {
		t.Fatalf("WORKGRAPH_OPERATION_PREFIX %q, WORKGRAPH_FENCE_KEYS_URL %q", got.Prefix, got.Keys)
	}
}
