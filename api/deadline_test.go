package api_test

import (
	"testing"
	"time"
)

// TestAskWithDeadline: an ask's due_in_seconds and on_overdue, the
// project's default deadline, and their refusals (400, nothing stored).
func TestAskWithDeadline(t *testing.T) {
	t.Parallel()
	f := itemSetup(t)
	f.mustItem(f.agent.Token, map[string]any{"title": "decide"})
	c := f.mustClaim("w1")
	type due struct {
		ID        string     `json:"id"`
		DueAt     *time.Time `json:"due_at"`
		CreatedAt time.Time  `json:"created_at"`
		Overdue   bool       `json:"overdue"`
		OnOverdue *string    `json:"on_overdue"`
	}

	t.Run("ErrInvalid", func(t *testing.T) {
		for _, tc := range []struct {
			field string
			body  map[string]any
		}{
			{"due_in_seconds", map[string]any{"due_in_seconds": 0}},
			{"on_overdue", map[string]any{"due_in_seconds": 60, "on_overdue": "panic"}},
			{"default_answer", map[string]any{"due_in_seconds": 60, "on_overdue": "default_answer"}},
			// A policy with no deadline at all: none given, and the
			// project sets no default.
			{"due_in_seconds", map[string]any{"on_overdue": "escalate"}},
		} {
			tc.body["epoch"], tc.body["question"] = c.Lease.Epoch, "q"
			field(t, f.mutate(f.agent.Token, c.Lease.ID, "attention", tc.body).problem(t, 400, "invalid_argument"), tc.field)
		}
		if n := f.count("SELECT count(*) FROM attention_requests"); n != 0 {
			t.Fatal("a refused request was stored")
		}
	})
	t.Run("OwnDeadline", func(t *testing.T) {
		var out struct{ Attention due }
		f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{
			"epoch": c.Lease.Epoch, "question": "FYI?", "blocking": false,
			"due_in_seconds": 60, "on_overdue": "default_answer", "default_answer": "yes",
		}).ok(t, 201, &out)
		a := out.Attention
		if a.DueAt == nil || !a.DueAt.Equal(a.CreatedAt.Add(time.Minute)) || a.Overdue || a.OnOverdue == nil || *a.OnOverdue != "default_answer" {
			t.Fatalf("ask with a deadline: %+v", a)
		}
	})
	t.Run("ProjectDefault", func(t *testing.T) {
		f.do("PATCH", "/v1/projects/alpha", f.human.Token, map[string]any{"attention_due_in_seconds": 3600}).problem(t, 403, "forbidden")
		field(t, f.do("PATCH", "/v1/projects/alpha", adminToken, map[string]any{"attention_due_in_seconds": -1}).problem(t, 400, "invalid_argument"), "attention_due_in_seconds")
		var p struct {
			AttentionDueInSeconds *int64 `json:"attention_due_in_seconds"`
			OnExpiry              string `json:"on_expiry"`
		}
		f.do("PATCH", "/v1/projects/alpha", adminToken, map[string]any{"attention_due_in_seconds": 3600}).ok(t, 200, &p)
		if p.AttentionDueInSeconds == nil || *p.AttentionDueInSeconds != 3600 || p.OnExpiry != "retry" {
			t.Fatalf("project after PATCH: %+v", p)
		}
		var out struct{ Attention due }
		f.mutate(f.agent.Token, c.Lease.ID, "attention", map[string]any{"epoch": c.Lease.Epoch, "question": "and now?"}).ok(t, 201, &out)
		if a := out.Attention; a.DueAt == nil || !a.DueAt.Equal(a.CreatedAt.Add(time.Hour)) {
			t.Fatalf("ask under the project's default: %+v", a)
		}
		f.do("PATCH", "/v1/projects/alpha", adminToken, map[string]any{"attention_due_in_seconds": 0}).ok(t, 200, &p)
		if p.AttentionDueInSeconds != nil {
			t.Fatalf("after removing the default: %+v", p)
		}
	})
}
