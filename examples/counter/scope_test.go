//go:build linux

package counter_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/fence"
)

// TestScopedToken: the fence token of a lease whose item declares touches
// carries its write scopes (from the claim and from each heartbeat), and
// a destination that requires scopes applies a write inside them and
// refuses one outside, changing nothing (a real server, the counter on a
// database of its own).
func TestScopedToken(t *testing.T) {
	t.Parallel()
	r := newSeedRun(t)
	r.svc.RequireScopes()
	it, err := r.b.CreateItem(r.ctx, "seed", client.CreateItemRequest{
		Title: "add to c", Priority: new(100), Touches: []string{"counter:c"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := r.b.Claim(r.ctx, "seed", client.ClaimRequest{Worker: "worker-b"})
	if err != nil || cl.Item.ID != it.ID {
		t.Fatalf("claim: %v (%+v), want the scoped item", err, cl)
	}
	hb, err := r.b.Heartbeat(r.ctx, cl.Lease.ID, client.HeartbeatRequest{Epoch: cl.Lease.Epoch})
	if err != nil {
		t.Fatal(err)
	}
	keys := r.keys()
	for name, tok := range map[string]string{"claim": cl.FenceToken, "heartbeat": hb.FenceToken} {
		c, err := fence.Verify(keys, tok)
		if err != nil || !slices.Equal(c.Scopes, []string{"counter:c"}) {
			t.Fatalf("%s token: %+v, %v; want scopes [counter:c]", name, c, err)
		}
	}
	add := func(counter string) (int, string) {
		body, _ := json.Marshal(map[string]int{"units": 2})
		req, _ := http.NewRequest(http.MethodPost, r.dest+"/counters/"+counter+"/add", bytes.NewReader(body))
		req.Header.Set(fence.HeaderFence, hb.FenceToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var p struct{ Code string }
		json.Unmarshal(raw, &p)
		return res.StatusCode, p.Code
	}
	if status, code := add("c"); status != http.StatusOK {
		t.Fatalf("add to c inside the scope: %d %s", status, code)
	}
	if status, code := add("d"); status != http.StatusForbidden || code != fence.CodeFenceOutOfScope {
		t.Fatalf("add to d outside the scope: %d %s, want 403 %s", status, code, fence.CodeFenceOutOfScope)
	}
	for name, want := range map[string]int64{"c": 2, "d": 0} {
		got, err := r.svc.Counter(r.ctx, name)
		if err != nil || got.Units != want {
			t.Fatalf("counter %s = %+v, %v; want %d units", name, got, err, want)
		}
	}
	// A lease whose item declares no touches holds no scope: its token
	// carries none, and the scoped destination refuses its writes.
	plain, err := r.b.Claim(r.ctx, "seed", client.ClaimRequest{Worker: "worker-b"})
	if err != nil || plain.Item.ID != r.job.ID {
		t.Fatalf("claim JOB-1: %v", err)
	}
	if c, err := fence.Verify(keys, plain.FenceToken); err != nil || c.Scopes != nil {
		t.Fatalf("JOB-1's token: %+v, %v; want no scopes", c, err)
	}
}

// keys reads the server's fence keys document.
func (r *seedRun) keys() []ed25519.PublicKey {
	r.t.Helper()
	res, err := http.Get(r.srv.URL() + fence.KeysPath)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	doc, _ := io.ReadAll(res.Body)
	keys, err := fence.ParseKeys(doc)
	if err != nil {
		r.t.Fatal(err)
	}
	return keys
}
