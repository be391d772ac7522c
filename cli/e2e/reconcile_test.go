package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// TestDecideUncertainOutcome: with on_expiry reconcile, a person decides
// an expired attempt's outcome from the CLI as from the web and the API:
// `attention ls` says a decision is wanted, `attention show` lists the
// attempt and its late report (kept, not applied), an answer in words is
// a usage error that names the way to decide, and `attention resolve
// --decision` retries, finishes with a result, or cancels.
func TestDecideUncertainOutcome(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	if _, err := e.admin.SetProjectOnExpiry(ctx, e.project, client.OnExpiryReconcile); err != nil {
		t.Fatal(err)
	}
	items := map[string]*client.Item{}
	leases := map[string]*client.Claim{}
	for _, title := range []string{"deploy a", "deploy b", "deploy c"} {
		items[title] = e.item(title)
	}
	for range items {
		cl, err := e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "w1", LeaseSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		leases[cl.Item.Title] = cl
	}
	requests := map[string]client.AttentionRequest{}
	eventually(t, 30*time.Second, "three uncertain outcomes", func() bool {
		// A claim reaps expired leases first; nothing is ready after it.
		e.agent.Claim(ctx, e.project, client.ClaimRequest{Worker: "w2"})
		page, err := e.human.ListAttention(ctx, e.project, client.ListAttentionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Attention {
			if r.Reason == "uncertain_outcome" {
				requests[r.ItemTitle] = r
			}
		}
		return len(requests) == 3
	})
	late := leases["deploy a"]
	if _, err := e.agent.Complete(ctx, late.Lease.ID, client.CompleteRequest{Epoch: late.Lease.Epoch, Result: json.RawMessage(`{"late": "report"}`)}); !errors.Is(err, client.ErrLeaseLost) {
		t.Fatalf("the old attempt's completion: %v, want lease_lost", err)
	}

	r := e.run(e.humanToken, nil, "attention", "ls")
	if r.code != 0 || !strings.Contains(r.stderr, "--decision retry|done|cancel") {
		t.Errorf("attention ls should say how to decide an uncertain outcome: %v", r)
	}
	a := requests["deploy a"]
	r = e.run(e.humanToken, nil, "attention", "show", a.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "late report: complete of lease "+late.Lease.ID) || !strings.Contains(r.stdout, `"late": "report"`) {
		t.Errorf("attention show should list the late completion: %v", r)
	}
	r = e.wantExit(e.humanToken, 2, "--decision", "attention", "resolve", a.ID, "retry")
	if !strings.Contains(r.stderr, "uncertain outcome") {
		t.Errorf("an answer in words to an uncertain outcome should say it takes a decision: %v", r)
	}
	e.wantExit(e.humanToken, 2, "retry, done or cancel", "attention", "resolve", a.ID, "--decision", "maybe")
	e.wantExit(e.humanToken, 2, "only with --decision done", "attention", "resolve", a.ID, "--decision", "retry", "--result", `{}`)
	if got := e.get(a.ItemID); got.State != "attention" {
		t.Fatalf("after the refused calls item %q is %s, want attention", got.Title, got.State)
	}

	var decided client.AttentionRequest
	e.mustJSON(e.humanToken, &decided, "attention", "resolve", a.ID, "--decision", "done", "--result", `{"deployed": true}`, "--note", "checked the dashboard")
	if decided.Decision == nil || *decided.Decision != "done" || decided.State != "resolved" {
		t.Errorf("decided done: %+v", decided)
	}
	if got := e.get(a.ItemID); got.State != "done" || string(got.Result) != `{"deployed":true}` {
		t.Errorf("after done: item is %s with result %s", got.State, got.Result)
	}
	r = e.run(e.humanToken, nil, "attention", "resolve", requests["deploy b"].ID, "--decision", "retry")
	if r.code != 0 || !strings.Contains(r.stdout, "decided: retry") {
		t.Errorf("retry: %v", r)
	}
	if got := e.get(requests["deploy b"].ItemID); got.State != "ready" {
		t.Errorf("after retry: item is %s, want ready", got.State)
	}
	e.mustJSON(e.humanToken, &decided, "attention", "resolve", requests["deploy c"].ID, "--decision", "cancel")
	if got := e.get(requests["deploy c"].ItemID); got.State != "cancelled" {
		t.Errorf("after cancel: item is %s, want cancelled", got.State)
	}
}

// TestOnExpiryFromTheCLI: on_expiry, the item's and its project's
// default, is set from the CLI as through the API: `items add
// --on-expiry`, `items edit --on-expiry` (default: back to the
// project's), `projects set --on-expiry`; a bad value is a usage error
// that changes nothing.
func TestOnExpiryFromTheCLI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	var it client.Item
	e.mustJSON(e.agentToken, &it, "items", "add", "Deploy to production", "--on-expiry", "reconcile")
	if it.OnExpiry == nil || *it.OnExpiry != "reconcile" {
		t.Fatalf("items add --on-expiry reconcile: on_expiry %v", it.OnExpiry)
	}
	r := e.run(e.agentToken, nil, "items", "show", it.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "on expiry") || !strings.Contains(r.stdout, "reconcile") {
		t.Errorf("items show should name the item's on_expiry: %v", r)
	}
	e.wantExit(e.humanToken, 2, "on_expiry", "items", "edit", it.ID, "--on-expiry", "sometimes")
	if got := e.get(it.ID); got.OnExpiry == nil || *got.OnExpiry != "reconcile" {
		t.Fatalf("a refused edit changed on_expiry to %v", got.OnExpiry)
	}
	e.mustJSON(e.humanToken, &it, "items", "edit", it.ID, "--on-expiry", "retry")
	if it.OnExpiry == nil || *it.OnExpiry != "retry" {
		t.Errorf("items edit --on-expiry retry: on_expiry %v", it.OnExpiry)
	}
	e.mustJSON(e.humanToken, &it, "items", "edit", it.ID, "--on-expiry", "default")
	if it.OnExpiry != nil {
		t.Errorf("items edit --on-expiry default: on_expiry %q, want null (the project's)", *it.OnExpiry)
	}

	e.wantExit(adminToken, 2, "retry or reconcile", "projects", "set", e.project, "--on-expiry", "sometimes")
	var p client.Project
	e.mustJSON(adminToken, &p, "projects", "set", e.project, "--on-expiry", "reconcile")
	if p.OnExpiry != "reconcile" {
		t.Errorf("projects set --on-expiry reconcile: %q", p.OnExpiry)
	}
	got, err := e.admin.GetProject(ctx, e.project)
	if err != nil || got.OnExpiry != "reconcile" {
		t.Errorf("the project's on_expiry is %q (%v), want reconcile", got.OnExpiry, err)
	}
}
