package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
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

// TestClaimEnvHandsOnTheFence: an agent that claims by hand (`eval
// "$(workgraph claim --env)"`, docs/agents.md) gets the same fence
// variables `workgraph work` hands its command, so the example request
// of "Fencing your effects" works after it: a token that verifies with
// the published key, for the lease the claim granted, the operation id
// prefix and the URL of the keys.
func TestClaimEnvHandsOnTheFence(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.item("fenced by hand")
	r := e.run(e.agentToken, nil, "claim", "--env")
	if r.code != 0 {
		t.Fatalf("claim --env: %v", r)
	}
	c := exec.Command("sh", "-c", `eval "$1" && printf '%s\n%s\n%s\n%s\n' "$WORKGRAPH_FENCE" "$WORKGRAPH_OPERATION_PREFIX" "$WORKGRAPH_FENCE_KEYS_URL" "$WORKGRAPH_LEASE_ID"`, "sh", r.stdout)
	c.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := c.Output()
	if err != nil {
		t.Fatalf("eval the claim's assignments: %v\n%s", err, r.stdout)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(got) != 4 {
		t.Fatalf("want four lines, got %q from:\n%s", out, r.stdout)
	}
	res, err := http.Get(e.url + fence.KeysPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(res.Body)
	res.Body.Close()
	keys, err := fence.ParseKeys(doc)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := fence.Verify(keys, got[0])
	if err != nil || claims.Item != it.ID || claims.Lease != got[3] || claims.Epoch != 1 {
		t.Fatalf("WORKGRAPH_FENCE %q after claim --env: %+v, %v\n%s", got[0], claims, err, r.stdout)
	}
	if got[1] != it.ID+"/" || got[2] != strings.TrimRight(e.url, "/")+fence.KeysPath {
		t.Fatalf("WORKGRAPH_OPERATION_PREFIX %q, WORKGRAPH_FENCE_KEYS_URL %q", got[1], got[2])
	}
}
