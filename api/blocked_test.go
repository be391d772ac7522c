package api_test

import (
	"testing"
)

// TestCompleteBlocked: a completion of an item that a person gave a
// dependency on an open item while a worker held it is 409 blocked,
// naming the dependency, single (with and without an Idempotency-Key)
// and in a batch, where it refuses only its own entry; nothing changes,
// and the worker can still heartbeat and release the lease.
func TestCompleteBlocked(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	x := f.mustItem(f.human.Token, map[string]any{"title": "x", "priority": 9})
	free := f.mustItem(f.human.Token, map[string]any{"title": "free", "priority": 5})
	c := f.mustClaim("w")
	other := f.mustClaim("w")
	if c.Item.ID != x.ID || other.Item.ID != free.ID {
		t.Fatalf("claimed %s and %s, want x then free", c.Item.ID, other.Item.ID)
	}
	pre := f.mustItem(f.human.Token, map[string]any{"title": "prerequisite", "labels": []string{"later"}})
	f.do("POST", "/v1/projects/alpha/items/"+x.ID+"/dependencies", f.human.Token, map[string]any{"depends_on": pre.ID}).ok(t, 201, nil)

	names := func(t *testing.T, p map[string]any) {
		t.Helper()
		deps, _ := p["dependencies"].([]any)
		if len(deps) != 1 || deps[0] != pre.ID || p["item_id"] != x.ID || p["lease_id"] != c.Lease.ID {
			t.Errorf("blocked problem %v: want dependencies [%s], item_id %s, lease_id %s", p, pre.ID, x.ID, c.Lease.ID)
		}
	}
	body := map[string]any{"epoch": c.Lease.Epoch, "result": 1}
	t.Run("Single", func(t *testing.T) {
		names(t, f.mutate(f.agent.Token, c.Lease.ID, "complete", body).problem(t, 409, "blocked"))
	})
	t.Run("IdempotencyKey", func(t *testing.T) {
		p := f.do("POST", "/v1/leases/"+c.Lease.ID+"/complete", f.agent.Token, body, withHeader("Idempotency-Key", "blocked-1")).problem(t, 409, "blocked")
		names(t, p)
	})
	t.Run("Batch", func(t *testing.T) {
		var answer struct {
			Completions []struct {
				LeaseID string         `json:"lease_id"`
				Status  int            `json:"status"`
				Problem map[string]any `json:"problem"`
			}
		}
		f.do("POST", "/v1/projects/alpha/completions", f.agent.Token, []map[string]any{
			{"lease_id": c.Lease.ID, "epoch": c.Lease.Epoch},
			{"lease_id": other.Lease.ID, "epoch": other.Lease.Epoch},
		}).ok(t, 200, &answer)
		if len(answer.Completions) != 2 {
			t.Fatalf("%d answers, want 2", len(answer.Completions))
		}
		if a := answer.Completions[0]; a.Status != 409 || a.Problem["code"] != "blocked" {
			t.Errorf("blocked entry: %d %v, want 409 blocked", a.Status, a.Problem)
		} else {
			names(t, a.Problem)
		}
		if a := answer.Completions[1]; a.Status != 200 {
			t.Errorf("other entry: %d %v, want 200", a.Status, a.Problem)
		}
	})
	var it item
	f.do("GET", "/v1/projects/alpha/items/"+x.ID, f.agent.Token, nil).ok(t, 200, &it)
	if it.State != "leased" {
		t.Fatalf("the refused completions changed the item: %+v", it)
	}
	f.mutate(f.agent.Token, c.Lease.ID, "heartbeat", map[string]any{"epoch": c.Lease.Epoch}).ok(t, 200, nil)
	f.mutate(f.agent.Token, c.Lease.ID, "release", map[string]any{"epoch": c.Lease.Epoch, "reason": "blocked"}).ok(t, 200, nil)
}
