package api_test

import (
	"strings"
	"testing"
)

type batchAnswer struct {
	LeaseID    string `json:"lease_id"`
	Status     int    `json:"status"`
	Completion *struct {
		Lease    lease `json:"lease"`
		Item     item  `json:"item"`
		Replayed bool  `json:"replayed"`
	} `json:"completion"`
	Heartbeat *struct {
		Lease         lease `json:"lease"`
		StopRequested bool  `json:"stop_requested"`
	} `json:"heartbeat"`
	Problem map[string]any `json:"problem"`
}

func TestBatches(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	for range 4 {
		f.mustItem(f.human.Token, map[string]any{"title": "batch"})
	}

	var batch struct {
		Claims []claimed `json:"claims"`
	}
	t.Run("ClaimBatch", func(t *testing.T) {
		f.claim(f.agent.Token, map[string]any{"worker": "w", "max_items": 3}).ok(t, 201, &batch)
		if len(batch.Claims) != 3 {
			t.Fatalf("granted %d, want 3", len(batch.Claims))
		}
		seen := map[string]bool{}
		for _, c := range batch.Claims {
			if c.Lease.Epoch != 1 || c.Item.State != "leased" || seen[c.Item.ID] || c.Lease.ItemID != c.Item.ID {
				t.Fatalf("claim %+v", c)
			}
			seen[c.Item.ID] = true
		}
	})

	t.Run("SingleClaimShapeUnchanged", func(t *testing.T) {
		var raw map[string]any
		f.claim(f.agent.Token, map[string]any{"worker": "w"}).ok(t, 201, &raw)
		if _, ok := raw["lease"]; !ok || raw["claims"] != nil {
			t.Fatalf("a claim without max_items answered %v", raw)
		}
		f.claim(f.agent.Token, map[string]any{"worker": "w", "max_items": 5}).ok(t, 204, nil)
	})

	t.Run("ErrMaxItems", func(t *testing.T) {
		for _, n := range []int{0, 101} {
			p := f.claim(f.agent.Token, map[string]any{"worker": "w", "max_items": n}).problem(t, 400, "invalid_argument")
			field(t, p, "max_items")
		}
	})

	t.Run("HeartbeatsOneStale", func(t *testing.T) {
		c := batch.Claims
		f.do("POST", "/v1/leases/"+c[0].Lease.ID+"/stop", f.human.Token, map[string]any{}).ok(t, 200, nil)
		body := []map[string]any{
			{"lease_id": c[0].Lease.ID, "epoch": 1, "progress": map[string]any{"p": 1},
				"usage": map[string]any{"tokens_in": 12, "cost_usd": 0.5}},
			{"lease_id": c[1].Lease.ID, "epoch": 2, "usage": map[string]any{"tokens_in": 99}},
		}
		var out struct {
			Heartbeats []batchAnswer `json:"heartbeats"`
		}
		f.do("POST", "/v1/projects/alpha/heartbeats", f.agent.Token, body).ok(t, 200, &out)
		if a := out.Heartbeats[0]; a.Status != 200 || a.Heartbeat == nil || !a.Heartbeat.StopRequested || a.Problem != nil {
			t.Errorf("entry 0: %+v, want 200 with stop_requested", a)
		}
		if a := out.Heartbeats[1]; a.Status != 409 || a.Heartbeat != nil || a.Problem["code"] != "lease_lost" {
			t.Errorf("entry 1 (wrong epoch): %+v, want 409 lease_lost", a)
		}
		// The usage of the entry whose fence held is stored; the refused
		// entry's is not.
		if n := f.count(`SELECT count(*) FROM leases WHERE id = '` + c[0].Lease.ID + `' AND tokens_in = 12 AND cost_micro_usd = 500000`); n != 1 {
			t.Errorf("entry 0's usage was not stored")
		}
		if n := f.count(`SELECT count(*) FROM leases WHERE id = '` + c[1].Lease.ID + `' AND tokens_in = 0`); n != 1 {
			t.Errorf("the refused entry's usage was stored")
		}
	})

	t.Run("CompletionsOneStale", func(t *testing.T) {
		c := batch.Claims
		f.mutate(f.agent.Token, c[1].Lease.ID, "release", map[string]any{"epoch": 1}).ok(t, 200, nil)
		single := f.mutate(f.agent.Token, c[1].Lease.ID, "complete", map[string]any{"epoch": 1}).problem(t, 409, "lease_lost")
		body := []map[string]any{}
		for _, cl := range c {
			body = append(body, map[string]any{"lease_id": cl.Lease.ID, "epoch": 1, "result": map[string]any{"ok": true}})
		}
		var out struct {
			Completions []batchAnswer `json:"completions"`
		}
		f.do("POST", "/v1/projects/alpha/completions", f.agent.Token, body).ok(t, 200, &out)
		if len(out.Completions) != 3 {
			t.Fatalf("%d answers", len(out.Completions))
		}
		for _, i := range []int{0, 2} {
			a := out.Completions[i]
			if a.Status != 200 || a.Completion == nil || a.Completion.Item.State != "done" || a.LeaseID != c[i].Lease.ID {
				t.Errorf("entry %d: %+v", i, a)
			}
		}
		if a := out.Completions[1]; a.Status != 409 || a.Problem["code"] != single["code"] {
			t.Errorf("stale entry: %+v, want the single call's 409 %v", a, single["code"])
		}
		if n := f.count(`SELECT count(*) FROM leases WHERE outcome = 'completed'`); n != 2 {
			t.Errorf("%d completed leases in the history, want 2", n)
		}
		// The same batch again: the completed entries replay.
		f.do("POST", "/v1/projects/alpha/completions", f.agent.Token, body).ok(t, 200, &out)
		if a := out.Completions[0]; a.Status != 200 || !a.Completion.Replayed {
			t.Errorf("repeat: %+v, want replayed", a)
		}
	})

	t.Run("ErrBadBatch", func(t *testing.T) {
		c := batch.Claims
		before := f.count(`SELECT count(*) FROM leases WHERE ended_at IS NULL`)
		cases := []struct {
			body  any
			field string
		}{
			{[]map[string]any{}, "body"},
			{map[string]any{"lease_id": c[0].Lease.ID}, "body"},
			{[]map[string]any{{"lease_id": c[0].Lease.ID}}, "completions[0].epoch"},
			{[]map[string]any{{"lease_id": "x", "epoch": 1}}, "completions[0].lease_id"},
			{[]map[string]any{{"lease_id": c[0].Lease.ID, "epoch": 1}, {"lease_id": c[0].Lease.ID, "epoch": 1}}, "completions[1].lease_id"},
		}
		for _, tc := range cases {
			p := f.do("POST", "/v1/projects/alpha/completions", f.agent.Token, tc.body).problem(t, 400, "invalid_argument")
			field(t, p, tc.field)
		}
		// A batch is an array: an object sent for it (the shape of the
		// answer, {"completions": [...]}) is told so, where the detail
		// said "must be a JSON object" of the object it was sent.
		for _, path := range []string{"/v1/projects/alpha/completions", "/v1/projects/alpha/heartbeats"} {
			p := f.do("POST", path, f.agent.Token, map[string]any{"completions": []any{}}).problem(t, 400, "invalid_argument")
			if d, _ := p["detail"].(string); !strings.Contains(d, "must be a JSON array") {
				t.Errorf("POST %s with an object: detail %q, want it to say the body must be a JSON array", path, d)
			}
		}
		// And a body of the wrong type where an object is wanted still
		// says object.
		po := f.do("POST", "/v1/projects/alpha/items", f.agent.Token, []any{}).problem(t, 400, "invalid_argument")
		if d, _ := po["detail"].(string); !strings.Contains(d, "must be a JSON object") {
			t.Errorf("POST items with an array: detail %q, want it to say the body must be a JSON object", d)
		}
		if after := f.count(`SELECT count(*) FROM leases WHERE ended_at IS NULL`); after != before {
			t.Errorf("a refused batch ended leases: %d live before, %d after", before, after)
		}
		p := f.do("POST", "/v1/projects/alpha/heartbeats", f.agent.Token,
			[]map[string]any{{"lease_id": c[0].Lease.ID, "epoch": 1, "lease_seconds": 0}}).problem(t, 400, "invalid_argument")
		field(t, p, "heartbeats[0].lease_seconds")
		p = f.do("POST", "/v1/projects/alpha/heartbeats", f.agent.Token,
			[]map[string]any{{"lease_id": c[0].Lease.ID, "epoch": 1, "usage": map[string]any{"tool_calls": -2}}}).problem(t, 400, "invalid_argument")
		field(t, p, "heartbeats[0].usage")
		p = f.do("POST", "/v1/projects/alpha/completions", f.agent.Token,
			[]map[string]any{{"lease_id": c[0].Lease.ID, "epoch": 1, "usage": map[string]any{"cost_usd": -1}}}).problem(t, 400, "invalid_argument")
		field(t, p, "completions[0].usage")
	})

	t.Run("ErrPeopleMayNotComplete", func(t *testing.T) {
		f.do("POST", "/v1/projects/alpha/completions", f.human.Token,
			[]map[string]any{{"lease_id": batch.Claims[0].Lease.ID, "epoch": 1}}).problem(t, 403, "forbidden")
	})
}

// TestBatchClaimScopes: over the API a batch claim grants items with
// write scopes, never two overlapping ones, with or without an
// Idempotency-Key (whose replay answers the same leases), and never an
// item requiring a capability it did not offer.
func TestBatchClaimScopes(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	f.mustItem(f.human.Token, map[string]any{"title": "web", "touches": []string{"repo:web/**"}})
	f.mustItem(f.human.Token, map[string]any{"title": "page", "touches": []string{"repo:web/page.go"}})
	f.mustItem(f.human.Token, map[string]any{"title": "db", "touches": []string{"db"}})
	f.mustItem(f.human.Token, map[string]any{"title": "gpu", "requires": []string{"gpu"}})

	var batch struct {
		Claims []claimed `json:"claims"`
	}
	body := map[string]any{"worker": "w", "max_items": 5}
	first := f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, withHeader("Idempotency-Key", "scoped-1"))
	first.ok(t, 201, &batch)
	if len(batch.Claims) == 0 {
		t.Fatal("a batch granted nothing while items with touches were ready")
	}
	again := f.do("POST", "/v1/projects/alpha/claims", f.agent.Token, body, withHeader("Idempotency-Key", "scoped-1"))
	if again.status != 201 || string(again.body) != string(first.body) {
		t.Fatalf("replay: %d %s, want the first answer", again.status, again.body)
	}
	for {
		var more struct {
			Claims []claimed `json:"claims"`
		}
		r := f.claim(f.agent.Token, body)
		if r.status == 204 {
			break
		}
		r.ok(t, 201, &more)
		batch.Claims = append(batch.Claims, more.Claims...)
	}
	titles := map[string]bool{}
	for _, c := range batch.Claims {
		titles[c.Item.Title] = true
	}
	if len(batch.Claims) != 2 || !titles["db"] || titles["web"] == titles["page"] {
		t.Fatalf("granted %v, want db and one of web and page", titles)
	}
}
