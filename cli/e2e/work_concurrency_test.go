package e2e

import (
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// TestWorkConcurrency: `work --loop --concurrency 3` runs up to three
// commands at once (batch claims, batched heartbeats). Every item is done
// with exactly one lease, each lease was renewed while its command ran,
// and the stored history shows runs overlapping, never more than three.
func TestWorkConcurrency(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var items []*client.Item
	for range 6 {
		items = append(items, e.item("in parallel"))
	}
	r := e.run(e.agentToken, nil, "work", "--loop", "--concurrency", "3", "--lease", "3s", "--",
		"sh", "-c", `sleep 2.5; echo '{"ok": true}' > "$WORKGRAPH_RESULT_FILE"`)
	if r.code != 0 {
		t.Fatalf("work: %v", r)
	}
	type span struct{ from, to time.Time }
	var spans []span
	for _, it := range items {
		if got := e.get(it.ID); got.State != client.StateDone {
			t.Fatalf("item %s is %s, want done\n%v", it.ID, got.State, r)
		}
		ls := e.leases(it.ID)
		if len(ls) != 1 || ls[0].Outcome == nil || *ls[0].Outcome != client.OutcomeCompleted || ls[0].EndedAt == nil {
			t.Fatalf("item %s leases %+v, want one completed", it.ID, ls)
		}
		if ls[0].Heartbeats < 1 {
			t.Errorf("lease %s was never renewed (heartbeats %d) in its 2.5 s of a 3 s lease", ls[0].ID, ls[0].Heartbeats)
		}
		spans = append(spans, span{ls[0].AcquiredAt, *ls[0].EndedAt})
	}
	most := 0
	for _, s := range spans {
		n := 0
		for _, o := range spans {
			if !o.from.After(s.from) && o.to.After(s.from) {
				n++
			}
		}
		most = max(most, n)
	}
	if most < 2 || most > 3 {
		t.Fatalf("at most %d leases were live at once, want 2 or 3 (concurrency 3)", most)
	}
}

// TestClaimMax: `claim --max N --json` grants up to N items in one call.
func TestClaimMax(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 3 {
		e.item("batch")
	}
	var cs []client.Claim
	e.mustJSON(e.agentToken, &cs, "claim", "--max", "2", "--worker", "w1")
	if len(cs) != 2 || cs[0].Item.ID == cs[1].Item.ID || cs[0].Lease.Epoch != 1 {
		t.Fatalf("claim --max 2 = %+v", cs)
	}
	e.mustJSON(e.agentToken, &cs, "claim", "--max", "5")
	if len(cs) != 1 {
		t.Fatalf("second claim granted %d, want the last item", len(cs))
	}
	e.wantExit(e.agentToken, 3, "nothing is ready", "claim", "--max", "5")
}

// TestWorkConcurrencyCapabilities: `work --concurrency N --capabilities C`
// claims its batches with the worker's capabilities, as the single-slot
// supervisor does: the items requiring C are done, the one requiring more
// is left ready.
func TestWorkConcurrencyCapabilities(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var gpu1, gpu2, more client.Item
	e.mustJSON(e.humanToken, &gpu1, "items", "add", "Train one", "--requires", "gpu")
	e.mustJSON(e.humanToken, &gpu2, "items", "add", "Train two", "--requires", "gpu")
	e.mustJSON(e.humanToken, &more, "items", "add", "Train on the cluster", "--requires", "gpu,cluster")
	r := e.run(e.agentToken, nil, "work", "--loop", "--concurrency", "2", "--capabilities", "gpu", "--lease", "30s", "--",
		"sh", "-c", `echo '{"ok": true}' > "$WORKGRAPH_RESULT_FILE"`)
	if r.code != 0 {
		t.Fatalf("work: %v", r)
	}
	for _, it := range []client.Item{gpu1, gpu2} {
		if got := e.get(it.ID); got.State != client.StateDone {
			t.Errorf("item %q is %s, want done\n%v", it.Title, got.State, r)
		}
	}
	if got := e.get(more.ID); got.State != client.StateReady {
		t.Errorf("item %q is %s, want ready (it requires cluster too)", more.Title, got.State)
	}
}

// TestWorkLoopExitsZeroAfterFailures: `work --loop` exits 0 when nothing
// more is ready, whatever its commands exited with (the failures are the
// items', retried by the server), with one slot and with --concurrency
// alike; without --loop a batch exits with the first failure.
func TestWorkLoopExitsZeroAfterFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"LoopOneSlot", []string{"--loop"}, 0},
		{"LoopConcurrency", []string{"--loop", "--concurrency", "2"}, 0},
		{"BatchConcurrency", []string{"--concurrency", "2"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			a, b := e.item("fails"), e.item("fails too")
			args := append(append([]string{"work"}, c.args...), "--lease", "30s", "--", "sh", "-c", "exit 3")
			r := e.run(e.agentToken, nil, args...)
			if r.code != c.want {
				t.Fatalf("workgraph %v: exit %d, want %d\n%v", args, r.code, c.want, r)
			}
			for _, it := range []*client.Item{a, b} {
				if got := e.get(it.ID); got.Failures != 1 {
					t.Fatalf("item %q has %d failures, want 1 (each run once)\n%v", it.Title, got.Failures, r)
				}
			}
		})
	}
}

// TestWorkConcurrencyNoMatch: `work --concurrency N` whose capabilities
// cover no ready item is told so at once, as the single-slot supervisor
// is: exit 6 naming the missing capability (it was told nothing was
// ready, exit 3, and with --wait it waited in silence). Nothing is
// claimed.
func TestWorkConcurrencyNoMatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var gpu client.Item
	e.mustJSON(e.humanToken, &gpu, "items", "add", "Train", "--requires", "gpu")
	e.wantExit(e.agentToken, 6, "waiting will not help", "work", "--concurrency", "2", "--capabilities", "docs", "--",
		"sh", "-c", "exit 0")
	if got := e.get(gpu.ID); got.State != client.StateReady || len(e.leases(gpu.ID)) != 0 {
		t.Fatalf("%q is %s with %d leases, want ready and never leased", gpu.Title, got.State, len(e.leases(gpu.ID)))
	}
}

// TestWorkConcurrencyScopes: `work --loop --concurrency N` does items with
// write scopes (its batch claims used to grant none, so it did nothing and
// said nothing was ready), never two with overlapping scopes at once.
func TestWorkConcurrencyScopes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var a, b, c client.Item
	e.mustJSON(e.humanToken, &a, "items", "add", "Restyle", "--touches", "repo:web/**")
	e.mustJSON(e.humanToken, &b, "items", "add", "Fix the page", "--touches", "repo:web/page.go")
	e.mustJSON(e.humanToken, &c, "items", "add", "Migrate", "--touches", "db:schema")
	r := e.run(e.agentToken, nil, "work", "--loop", "--concurrency", "3", "--lease", "30s", "--",
		"sh", "-c", `echo '{"ok": true}' > "$WORKGRAPH_RESULT_FILE"`)
	if r.code != 0 {
		t.Fatalf("work: %v", r)
	}
	for _, it := range []client.Item{a, b, c} {
		if got := e.get(it.ID); got.State != client.StateDone {
			t.Errorf("item %q is %s, want done\n%v", it.Title, got.State, r)
		}
	}
	la, lb := e.leases(a.ID), e.leases(b.ID)
	if len(la) == 1 && len(lb) == 1 && la[0].EndedAt != nil && lb[0].EndedAt != nil &&
		la[0].AcquiredAt.Before(*lb[0].EndedAt) && lb[0].AcquiredAt.Before(*la[0].EndedAt) {
		t.Errorf("the overlapping items ran at once: %v-%v and %v-%v", la[0].AcquiredAt, *la[0].EndedAt, lb[0].AcquiredAt, *lb[0].EndedAt)
	}
}
