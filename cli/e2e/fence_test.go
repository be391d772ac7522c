package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/fence"
	"github.com/workgraph-dev/workgraph/server"
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

// TestFenceRotate: `workgraph fence rotate` gives the deployment a new
// signing key without breaking verification: the running server signs
// with it and publishes it within its refresh interval, the old key stays
// published for the grace period, and a destination that follows the
// keys document accepts the tokens of both, without a restart. The
// server reads the keys every rotateRefresh, not every
// fencekey.RefreshInterval (10 s), so that the test need not wait as long.
func TestFenceRotate(t *testing.T) {
	t.Parallel()
	const rotateRefresh = 200 * time.Millisecond
	e := setupWith(t, func(c *server.Config) { c.FenceKeyRefresh = rotateRefresh })
	ctx := context.Background()
	// MinRefetch is cut so that the test need not wait for it after the
	// destination's first fetch; the refetch on an unknown key is what is
	// tested.
	ks := &fence.KeySet{URL: e.url + fence.KeysPath, MinRefetch: time.Millisecond}
	e.item("before the rotation")
	old, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Verify(ctx, old.FenceToken); err != nil {
		t.Fatalf("the token before the rotation: %v", err)
	}

	r := e.run(adminToken, nil, "fence", "rotate", "--grace", "1h", "--database-url", e.pool.Config().ConnString())
	if r.code != 0 || !strings.Contains(r.stdout, "new fence key ") {
		t.Fatalf("fence rotate: %v", r)
	}
	kid := strings.Fields(strings.TrimPrefix(r.stdout, "new fence key "))[0]
	kid = strings.TrimSuffix(kid, ";")
	// Waits on the keys document in-process, then asks the CLI once: a
	// run of the binary every 50 ms until the refresh cost the test 6 of
	// its 7 s of CPU.
	published := func() fence.Keys {
		var doc fence.Keys
		resp, err := http.Get(e.url + fence.KeysPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatalf("GET %s: %v", fence.KeysPath, err)
		}
		return doc
	}
	// Within 25 refreshes, well before fencekey.RefreshInterval: a server
	// that kept the default would be seen not to publish it in time.
	eventually(t, 25*rotateRefresh, "the server to publish the new key", func() bool {
		doc := published()
		return len(doc.Keys) == 2 && doc.Keys[0].KeyID == kid
	})
	var doc fence.Keys
	e.mustJSON(e.agentToken, &doc, "fence", "key", "--json")
	if len(doc.Keys) != 2 || doc.Keys[0].KeyID != kid {
		t.Fatalf("fence key --json after the rotation: %+v, want 2 keys, %s first", doc, kid)
	}

	e.item("after the rotation")
	cur, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ks.Verify(ctx, cur.FenceToken)
	if err != nil || c.KeyID != kid {
		t.Fatalf("the token after the rotation: key %s, %v; want key %s, verified", c.KeyID, err, kid)
	}
	if _, err := ks.Verify(ctx, old.FenceToken); err != nil {
		t.Fatalf("the token of the lease granted before the rotation, within the grace: %v", err)
	}
	e.wantExit(adminToken, 2, "--grace", "fence", "rotate", "--grace", "200h", "--database-url", e.pool.Config().ConnString())
}
