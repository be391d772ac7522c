package lease_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func (f fixture) child(t testing.TB, parent uuid.UUID) graph.Item {
	t.Helper()
	return f.item(t, graph.NewItem{ParentID: &parent})
}

func (f fixture) heartbeat(t testing.TB, l lease.Lease, hb lease.Heartbeat) lease.HeartbeatResult {
	t.Helper()
	res, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), hb)
	if err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	return res
}

// requestsOf lists the requests of reason on the item.
func (f fixture) requestsOf(t testing.TB, item uuid.UUID, reason string) []attention.Request {
	t.Helper()
	allPage, err := f.att.ForItem(f.ctx, f.project, item, "", 0)
	all := allPage.Requests
	if err != nil {
		t.Fatal(err)
	}
	var out []attention.Request
	for _, r := range all {
		if r.Reason == reason {
			out = append(out, r)
		}
	}
	return out
}

// claimItem claims until it holds item (the other claims are released).
func (f fixture) claimOf(t testing.TB, worker string, item uuid.UUID) lease.Lease {
	t.Helper()
	c := f.claim(t, worker)
	if c.Item.ID != item {
		t.Fatalf("claim by %s got %s, want %s", worker, c.Item.ID, item)
	}
	return c.Lease
}

func TestBudget(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	root := f.item(t, graph.NewItem{Title: "root"})
	a := f.child(t, root.ID)
	b := f.child(t, root.ID)
	if _, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxTokens: ptr[int64](1000)}, "alice"); err != nil {
		t.Fatalf("SetBudget: %v", err)
	}
	la := f.claimOf(t, "w1", a.ID)
	lb := f.claimOf(t, "w2", b.ID)

	t.Run("UnderBudget", func(t *testing.T) {
		res := f.heartbeat(t, la, lease.Heartbeat{Usage: lease.Usage{TokensIn: 200, TokensOut: 100, CostUSD: 0.25, ToolCalls: 3}})
		if res.StopRequested {
			t.Fatalf("stop at 300 of 1000 tokens (%s)", res.StopReason)
		}
	})
	t.Run("CrossingStopsEveryLease", func(t *testing.T) {
		res := f.heartbeat(t, lb, lease.Heartbeat{Usage: lease.Usage{TokensIn: 800}})
		if !res.StopRequested || res.StopReason != lease.StopBudgetExhausted {
			t.Fatalf("heartbeat crossing the budget: stop %v (%q), want budget_exhausted", res.StopRequested, res.StopReason)
		}
		res = f.heartbeat(t, la, lease.Heartbeat{})
		if !res.StopRequested || res.StopReason != lease.StopBudgetExhausted {
			t.Fatalf("other lease of the subtree: stop %v (%q), want budget_exhausted", res.StopRequested, res.StopReason)
		}
	})
	t.Run("OneRequestOnTheBudgetItem", func(t *testing.T) {
		f.heartbeat(t, lb, lease.Heartbeat{Usage: lease.Usage{TokensIn: 900}})
		reqs := f.requestsOf(t, root.ID, attention.ReasonBudgetExhausted)
		if len(reqs) != 1 || !reqs[0].Blocking || reqs[0].State != attention.StateOpen || reqs[0].Source != attention.SourceSystem {
			t.Fatalf("budget_exhausted requests on the root = %+v, want one open blocking system request", reqs)
		}
	})
	t.Run("LowerReportIgnored", func(t *testing.T) {
		res := f.heartbeat(t, lb, lease.Heartbeat{Usage: lease.Usage{TokensIn: 100}})
		if res.Lease.Usage.TokensIn != 900 {
			t.Fatalf("tokens_in after a lower report = %d, want 900", res.Lease.Usage.TokensIn)
		}
	})
	t.Run("NewClaimsRefused", func(t *testing.T) {
		f.child(t, root.ID)
		f.nothingFor(t, "w3", nil)
	})
	t.Run("Ledger", func(t *testing.T) {
		bud, err := f.leases.Budget(f.ctx, f.project, root.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !bud.Spent || bud.Used.Tokens() != 1200 || bud.Used.ToolCalls != 3 || bud.Used.CostUSD != 0.25 {
			t.Fatalf("budget = %+v, want spent with 1200 tokens, 3 tool calls, $0.25", bud)
		}
		u, err := f.leases.UsageOf(f.ctx, f.project, root.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Own.Tokens() != 0 || u.Subtree.Tokens() != 1200 {
			t.Fatalf("root usage = %+v, want own 0, subtree 1200", u)
		}
		w, err := f.leases.WorkerUsage(f.ctx, f.project)
		if err != nil {
			t.Fatal(err)
		}
		if w["w1"].Tokens() != 300 || w["w2"].Tokens() != 900 {
			t.Fatalf("worker usage = %+v, want w1 300, w2 900", w)
		}
	})
	t.Run("AnAnswerDoesNotCloseIt", func(t *testing.T) {
		// An answer or a dismissal would close the request and leave the
		// budget spent: nothing under it handed out, and nobody asked any
		// more. Only raising the budget (or cancelling the item) closes it.
		req := f.requestsOf(t, root.ID, attention.ReasonBudgetExhausted)[0]
		if _, err := f.att.Resolve(f.ctx, f.project, req.ID, "go on", "alice"); wgerr.CodeOf(err) != wgerr.CodeConflict ||
			!strings.Contains(err.Error(), "budget") {
			t.Fatalf("Resolve of a budget_exhausted request = %v, want conflict naming the budget", err)
		}
		if _, err := f.att.Dismiss(f.ctx, f.project, req.ID, "alice", ""); wgerr.CodeOf(err) != wgerr.CodeConflict {
			t.Fatalf("Dismiss of a budget_exhausted request = %v, want conflict", err)
		}
		reqs := f.requestsOf(t, root.ID, attention.ReasonBudgetExhausted)
		if len(reqs) != 1 || reqs[0].State != attention.StateOpen {
			t.Fatalf("request after a refused answer = %+v, want still open", reqs)
		}
	})
	t.Run("RaiseLetsWorkContinue", func(t *testing.T) {
		bud, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxTokens: ptr[int64](5000)}, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if bud.Spent || bud.RequestID != nil {
			t.Fatalf("raised budget = %+v, want not spent, no request", bud)
		}
		reqs := f.requestsOf(t, root.ID, attention.ReasonBudgetExhausted)
		if len(reqs) != 1 || reqs[0].State != attention.StateResolved {
			t.Fatalf("request after the raise = %+v, want resolved", reqs)
		}
		if res := f.heartbeat(t, la, lease.Heartbeat{}); res.StopRequested {
			t.Fatalf("stop after the raise (%s)", res.StopReason)
		}
		f.claim(t, "w3")
	})
}

// TestBudgetCountsPastUsage: a budget set on a subtree that already spent
// counts what its leases reported before, and a new budget that is
// already spent opens its request at once.
func TestBudgetCountsPastUsage(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	root := f.item(t, graph.NewItem{Title: "root"})
	a := f.child(t, root.ID)
	f.child(t, root.ID)
	la := f.claimOf(t, "w1", a.ID)
	f.heartbeat(t, la, lease.Heartbeat{Usage: lease.Usage{TokensOut: 70, CostUSD: 1.5}})
	bud, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxCostUSD: ptr(1.0)}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !bud.Spent || bud.Used.TokensOut != 70 || bud.RequestID == nil {
		t.Fatalf("budget = %+v, want spent by the past 70 tokens and $1.5, with a request", bud)
	}
	if res := f.heartbeat(t, la, lease.Heartbeat{}); res.StopReason != lease.StopBudgetExhausted {
		t.Fatalf("live lease under the new budget: stop reason %q", res.StopReason)
	}
	f.nothingFor(t, "w2", nil)
}

// TestBudgetCrossedConcurrently: heartbeats of many leases cross the
// budget at once; exactly one budget_exhausted request is opened. A
// database of its own: the heartbeats run concurrently.
func TestBudgetCrossedConcurrently(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	root := f.item(t, graph.NewItem{Title: "root"})
	const n = 12
	for range n {
		f.child(t, root.ID)
	}
	if _, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxTokens: ptr[int64](10)}, "alice"); err != nil {
		t.Fatal(err)
	}
	leases := make([]lease.Lease, n)
	for i := range leases {
		leases[i] = f.claim(t, "w").Lease
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{Usage: lease.Usage{TokensIn: 20}})
			if err == nil && !res.StopRequested {
				// Every heartbeat commits its usage before it checks, so
				// each sees at least its own 20 tokens over the limit.
				err = errors.New("a heartbeat over the budget was not told to stop")
			}
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if reqs := f.requestsOf(t, root.ID, attention.ReasonBudgetExhausted); len(reqs) != 1 {
		t.Fatalf("%d budget_exhausted requests, want exactly 1", len(reqs))
	}
	bud, err := f.leases.Budget(f.ctx, f.project, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bud.Used.TokensIn != 20*n {
		t.Fatalf("ledger tokens_in = %d, want %d", bud.Used.TokensIn, 20*n)
	}
}

func TestDecomposeDepthLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	root := f.item(t, graph.NewItem{Title: "root"})
	if _, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxDepth: ptr(1)}, "alice"); err != nil {
		t.Fatal(err)
	}
	l := f.claimOf(t, "w", root.ID)
	d, err := f.leases.Decompose(f.ctx, f.project, fence(l), []graph.NewChild{{Key: "a", Title: "a"}})
	if err != nil {
		t.Fatalf("decompose at depth 0 with a limit of 1: %v", err)
	}
	kid := d.Children[0]
	lk := f.claimOf(t, "w", kid.ID)
	before := f.snapshot(t, kid.ID)
	_, err = f.leases.Decompose(f.ctx, f.project, fence(lk), []graph.NewChild{{Key: "b", Title: "b"}})
	if !errors.Is(err, &wgerr.Error{Code: wgerr.CodeDepthLimit}) {
		t.Fatalf("decompose past the depth limit = %v, want depth_limit", err)
	}
	if after := f.snapshot(t, kid.ID); after != before {
		t.Fatalf("a refused decomposition changed the item:\n%s\n%s", before, after)
	}
}

func TestNoProgress(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	if _, err := f.graph.UpdateProject(f.ctx, f.project, graph.ProjectPatch{
		QuietAfter: ptr(5 * time.Minute), NoProgressAfter: ptr(10 * time.Minute),
	}); err != nil {
		t.Fatal(err)
	}
	wedged := f.item(t, graph.NewItem{Title: "wedged", Priority: 2})
	busy := f.item(t, graph.NewItem{Title: "busy", Priority: 1})
	claim := func(worker string, want uuid.UUID) lease.Lease {
		c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker, TTL: time.Hour})
		if err != nil || c.Item.ID != want {
			t.Fatalf("claim: %v, %v", c.Item.Title, err)
		}
		return c.Lease
	}
	lw := claim("w1", wedged.ID)
	lb := claim("w2", busy.ID)
	liveness := func() map[uuid.UUID]lease.Liveness {
		acts, err := f.leases.Activity(f.ctx, f.project)
		if err != nil {
			t.Fatal(err)
		}
		out := map[uuid.UUID]lease.Liveness{}
		for _, a := range acts {
			out[a.LeaseID] = a.Liveness
		}
		return out
	}
	sweeper := lease.NewSweeper(f.leases, time.Hour, nil)
	sweep := func() int {
		n, err := sweeper.RunOnce(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Both heartbeat every minute; only busy's progress changes.
	for i := 1; i <= 10; i++ {
		f.clock.Advance(time.Minute)
		f.heartbeat(t, lw, lease.Heartbeat{Progress: []byte(`{"step":"stuck"}`)})
		f.heartbeat(t, lb, lease.Heartbeat{Progress: []byte(`{"n":` + strconv.Itoa(i) + `}`)})
		live := liveness()
		want := lease.LivenessHealthy
		if i >= 6 { // progress unchanged since minute 1, the window is 5
			want = lease.LivenessQuiet
		}
		if live[lw.ID] != want || live[lb.ID] != lease.LivenessHealthy {
			t.Fatalf("minute %d: wedged %s, busy %s; want %s, healthy", i, live[lw.ID], live[lb.ID], want)
		}
		if n := sweep(); n != 0 {
			t.Fatalf("minute %d: the sweeper ended %d leases, within the no-progress window", i, n)
		}
	}
	f.clock.Advance(2 * time.Minute)
	f.heartbeat(t, lb, lease.Heartbeat{Progress: []byte(`{"n":12}`)})
	if n := sweep(); n != 1 {
		t.Fatalf("past the window the sweeper ended %d leases, want 1", n)
	}
	got := f.getLease(t, lw.ID)
	if got.Outcome == nil || *got.Outcome != lease.OutcomeAttentionRequested {
		t.Fatalf("wedged lease outcome = %v, want attention_requested", got.Outcome)
	}
	reqs := f.requestsOf(t, wedged.ID, attention.ReasonNoProgress)
	if len(reqs) != 1 || !reqs[0].Blocking || reqs[0].LeaseID == nil || *reqs[0].LeaseID != lw.ID {
		t.Fatalf("no_progress requests = %+v, want one blocking request naming the lease", reqs)
	}
	if got := f.getLease(t, lb.ID); got.EndedAt != nil {
		t.Fatalf("the lease that made progress ended (%v)", *got.Outcome)
	}
}

// TestNoProgressIsNotSilence: the no-progress policy ends a lease that
// keeps heartbeating without progress, not one that does not heartbeat.
// A lease not yet renewed, within half its TTL, is healthy (its first
// heartbeat is not due); one silent for longer is stale and ends by
// expiry, its item handed out again, with no request for a person.
func TestNoProgressIsNotSilence(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	if _, err := f.graph.UpdateProject(f.ctx, f.project, graph.ProjectPatch{
		QuietAfter: ptr(5 * time.Minute), NoProgressAfter: ptr(10 * time.Minute),
	}); err != nil {
		t.Fatal(err)
	}
	fresh := f.item(t, graph.NewItem{Title: "fresh", Priority: 2})
	gone := f.item(t, graph.NewItem{Title: "gone", Priority: 1})
	claim := func(worker string, want uuid.UUID, ttl time.Duration) lease.Lease {
		c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker, TTL: ttl})
		if err != nil || c.Item.ID != want {
			t.Fatalf("claim: %v, %v", c.Item.Title, err)
		}
		return c.Lease
	}
	lf := claim("w1", fresh.ID, time.Hour)
	lg := claim("w2", gone.ID, 20*time.Minute)
	f.clock.Advance(time.Minute)
	f.heartbeat(t, lg, lease.Heartbeat{Progress: []byte(`{"step":1}`)}) // then w2 dies
	liveness := func() map[uuid.UUID]lease.Liveness {
		acts, err := f.leases.Activity(f.ctx, f.project)
		if err != nil {
			t.Fatal(err)
		}
		out := map[uuid.UUID]lease.Liveness{}
		for _, a := range acts {
			out[a.LeaseID] = a.Liveness
		}
		return out
	}
	sweeper := lease.NewSweeper(f.leases, time.Hour, nil)
	// Minute 11: fresh has not heartbeated (due at minute 20); gone has
	// been silent for half its TTL.
	f.clock.Advance(10 * time.Minute)
	if live := liveness(); live[lf.ID] != lease.LivenessHealthy || live[lg.ID] != lease.LivenessStale {
		t.Fatalf("minute 11: fresh %s, gone %s; want healthy, stale", live[lf.ID], live[lg.ID])
	}
	if n, err := sweeper.RunOnce(f.ctx); err != nil || n != 0 {
		t.Fatalf("minute 11: the sweeper ended %d leases (%v), want none: neither kept heartbeating", n, err)
	}
	// Minute 22: gone's lease has expired; the sweeper ends it as expired.
	f.clock.Advance(11 * time.Minute)
	if _, err := sweeper.RunOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.getLease(t, lg.ID); got.Outcome == nil || *got.Outcome != lease.OutcomeExpired {
		t.Fatalf("the silent lease ended as %v, want expired", got.Outcome)
	}
	if got := f.getLease(t, lf.ID); got.EndedAt != nil {
		t.Fatalf("the lease not yet due to heartbeat ended as %v", *got.Outcome)
	}
	for _, it := range []uuid.UUID{fresh.ID, gone.ID} {
		if reqs := f.requestsOf(t, it, attention.ReasonNoProgress); len(reqs) != 0 {
			t.Fatalf("no_progress requests on a lease that did not heartbeat: %+v", reqs)
		}
	}
}

// TestBudgetWallTime: a wall-time budget runs out by the (stub) clock
// with no write at all: claims under it find nothing and the sweeper opens
// its one request.
func TestBudgetWallTime(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	root := f.item(t, graph.NewItem{Title: "root"})
	f.child(t, root.ID)
	if _, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxWall: ptr(time.Hour)}, "alice"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	f.nothingFor(t, "w", nil)
	sweeper := lease.NewSweeper(f.leases, time.Hour, nil)
	for range 2 {
		if _, err := sweeper.RunOnce(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if reqs := f.requestsOf(t, root.ID, attention.ReasonBudgetExhausted); len(reqs) != 1 {
		t.Fatalf("%d budget_exhausted requests after two sweeps, want 1", len(reqs))
	}
}

// TestBudgetRequestNamesTheLimit: the budget_exhausted request tells the
// person which limit was reached, in its question and in its context
// ("reached", the limits as the budget's PUT names them), so a budget spent by its wall time does not read as one
// spent by its usage (0 tokens, $0).
func TestBudgetRequestNamesTheLimit(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	wall := f.item(t, graph.NewItem{Title: "wall", Priority: 1})
	tokens := f.item(t, graph.NewItem{Title: "tokens", Priority: 2})
	if _, err := f.leases.SetBudget(f.ctx, f.project, wall.ID, lease.BudgetLimits{MaxWall: ptr(time.Hour), MaxTokens: ptr(int64(1000))}, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.SetBudget(f.ctx, f.project, tokens.ID, lease.BudgetLimits{MaxWall: ptr(100 * time.Hour), MaxTokens: ptr(int64(100))}, "alice"); err != nil {
		t.Fatal(err)
	}
	l := f.claimOf(t, "w", tokens.ID)
	f.heartbeat(t, l, lease.Heartbeat{Usage: lease.Usage{TokensIn: 70, TokensOut: 50}})
	f.clock.Advance(2 * time.Hour)
	if _, err := lease.NewSweeper(f.leases, time.Hour, nil).RunOnce(f.ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		item    uuid.UUID
		reached string
		says    string
	}{
		{wall.ID, "max_wall_seconds", "wall time of 1h0m0s has run out"},
		{tokens.ID, "max_tokens", "120 tokens of the 100 allowed"},
	} {
		reqs := f.requestsOf(t, tc.item, attention.ReasonBudgetExhausted)
		if len(reqs) != 1 {
			t.Fatalf("%d budget_exhausted requests, want 1", len(reqs))
		}
		var ctx struct {
			Budget struct {
				Reached []string `json:"reached"`
			} `json:"budget"`
		}
		if err := json.Unmarshal(reqs[0].Context, &ctx); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(reqs[0].Question, tc.says) || len(ctx.Budget.Reached) != 1 || ctx.Budget.Reached[0] != tc.reached {
			t.Errorf("request %q, reached %v; want it to say %q, reached [%s]", reqs[0].Question, ctx.Budget.Reached, tc.says, tc.reached)
		}
	}
}

// TestBudgetBatch: the batch paths keep the budget's rules as the single
// ones do: a batch claim skips items under a spent budget, a batch
// heartbeat of a lease under it answers stop (budget_exhausted), and a
// batch heartbeat's changed progress marker moves progress_at.
func TestBudgetBatch(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	root := f.item(t, graph.NewItem{Title: "root"})
	f.child(t, root.ID)
	f.child(t, root.ID)
	if _, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxTokens: ptr[int64](100)}, "alice"); err != nil {
		t.Fatalf("SetBudget: %v", err)
	}
	claims, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w1"}, 10)
	if err != nil || len(claims) != 2 {
		t.Fatalf("ClaimBatch = %d claims, %v; want the 2 children", len(claims), err)
	}
	for _, c := range claims {
		if len(c.Lease.BudgetRoots) != 1 || c.Lease.BudgetRoots[0] != root.ID {
			t.Fatalf("batch-claimed lease budget roots = %v, want [%s]", c.Lease.BudgetRoots, root.ID)
		}
	}

	entries := func(progress string) []lease.HeartbeatEntry {
		out := make([]lease.HeartbeatEntry, len(claims))
		for i, c := range claims {
			out[i] = lease.HeartbeatEntry{Fence: fence(c.Lease), Heartbeat: lease.Heartbeat{Progress: json.RawMessage(progress)}}
		}
		return out
	}
	answers, err := f.leases.HeartbeatBatch(f.ctx, f.project, nil, entries(`{"step": 1}`))
	if err != nil {
		t.Fatalf("HeartbeatBatch: %v", err)
	}
	for i, an := range answers {
		if an.Err != nil || an.Result.StopRequested {
			t.Fatalf("answer %d under budget = %+v", i, an)
		}
		if an.Result.Lease.ProgressAt == nil {
			t.Errorf("answer %d: a changed progress marker left progress_at unset", i)
		}
	}

	f.heartbeat(t, claims[0].Lease, lease.Heartbeat{Usage: lease.Usage{TokensIn: 150}})
	answers, err = f.leases.HeartbeatBatch(f.ctx, f.project, nil, entries(`{"step": 1}`))
	if err != nil {
		t.Fatalf("HeartbeatBatch: %v", err)
	}
	for i, an := range answers {
		if an.Err != nil || !an.Result.StopRequested || an.Result.StopReason != lease.StopBudgetExhausted {
			t.Errorf("answer %d over budget: stop %v (%q), err %v; want budget_exhausted",
				i, an.Result.StopRequested, an.Result.StopReason, an.Err)
		}
	}

	f.child(t, root.ID)
	if got, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w2"}, 10); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("ClaimBatch under a spent budget = %d claims, %v; want ErrNothingReady", len(got), err)
	}
}

// TestBatchUsage: the batch heartbeat and completion take each entry's
// usage as the single calls do: monotonic per lease (a lower report is
// ignored, a higher one wins), charged to the worker and to the budgets
// over the item, and a spent budget answers stop on the entries under it
// only.
func TestBatchUsage(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	root := f.item(t, graph.NewItem{Title: "root", Priority: 1})
	under := f.child(t, root.ID)
	free := f.item(t, graph.NewItem{Title: "free"})
	if _, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxTokens: ptr[int64](100)}, "alice"); err != nil {
		t.Fatalf("SetBudget: %v", err)
	}
	claims, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w1"}, 10)
	if err != nil || len(claims) != 2 {
		t.Fatalf("ClaimBatch = %d claims, %v; want 2", len(claims), err)
	}
	byItem := map[uuid.UUID]lease.Lease{}
	for _, c := range claims {
		byItem[c.Item.ID] = c.Lease
	}
	lu, lf := byItem[under.ID], byItem[free.ID]
	beat := func(u, fr lease.Usage) []lease.HeartbeatAnswer {
		t.Helper()
		answers, err := f.leases.HeartbeatBatch(f.ctx, f.project, nil, []lease.HeartbeatEntry{
			{Fence: fence(lu), Heartbeat: lease.Heartbeat{Usage: u}},
			{Fence: fence(lf), Heartbeat: lease.Heartbeat{Usage: fr}},
		})
		if err != nil {
			t.Fatalf("HeartbeatBatch: %v", err)
		}
		return answers
	}
	stored := func(l lease.Lease) lease.Usage {
		t.Helper()
		got, err := f.leases.Get(f.ctx, f.project, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Usage
	}
	ledger := func() lease.Usage {
		t.Helper()
		b, err := f.leases.Budget(f.ctx, f.project, root.ID)
		if err != nil {
			t.Fatal(err)
		}
		return b.Used
	}

	answers := beat(lease.Usage{TokensIn: 30, CostUSD: 0.25, ToolCalls: 3}, lease.Usage{TokensIn: 500, TokensOut: 7})
	for i, an := range answers {
		if an.Err != nil || an.Result.StopRequested {
			t.Fatalf("answer %d within the budget = %+v", i, an)
		}
	}
	if u := answers[0].Result.Lease.Usage; u != (lease.Usage{TokensIn: 30, CostUSD: 0.25, ToolCalls: 3}) {
		t.Fatalf("the answer's usage = %+v, want the report", u)
	}
	// A lower report (out of order, a retry) changes nothing; a higher
	// figure wins on its own.
	beat(lease.Usage{TokensIn: 10, TokensOut: 40, CostUSD: 0.1}, lease.Usage{TokensIn: 400})
	if u := stored(lu); u != (lease.Usage{TokensIn: 30, TokensOut: 40, CostUSD: 0.25, ToolCalls: 3}) {
		t.Fatalf("under's usage = %+v, want each figure's largest report", u)
	}
	if u := stored(lf); u != (lease.Usage{TokensIn: 500, TokensOut: 7}) {
		t.Fatalf("free's usage = %+v, want its first report (the second was lower)", u)
	}
	// The budget is charged for its subtree's lease only.
	if u := ledger(); u != (lease.Usage{TokensIn: 30, TokensOut: 40, CostUSD: 0.25, ToolCalls: 3}) {
		t.Fatalf("ledger = %+v, want under's usage alone", u)
	}
	workers, err := f.leases.WorkerUsage(f.ctx, f.project)
	if err != nil {
		t.Fatal(err)
	}
	if w := workers["w1"]; w.TokensIn != 530 || w.TokensOut != 47 {
		t.Fatalf("worker usage = %+v, want both leases' usage (530 in, 47 out)", w)
	}

	// Crossing the budget: the entry under it is told to stop, the other
	// is not.
	answers = beat(lease.Usage{TokensIn: 70}, lease.Usage{})
	if an := answers[0]; an.Err != nil || !an.Result.StopRequested || an.Result.StopReason != lease.StopBudgetExhausted {
		t.Fatalf("entry over the budget: stop %v (%q), err %v; want budget_exhausted", an.Result.StopRequested, an.Result.StopReason, an.Err)
	}
	if an := answers[1]; an.Err != nil || an.Result.StopRequested {
		t.Fatalf("entry under no budget: %+v, want no stop", an)
	}

	// The batch completion takes a final usage per entry, monotonic too.
	done, err := f.leases.CompleteBatch(f.ctx, f.project, nil, []lease.CompletionEntry{
		{Fence: fence(lu), Usage: lease.Usage{TokensIn: 5, TokensOut: 60}},
		{Fence: fence(lf), Usage: lease.Usage{TokensIn: 900, ToolCalls: 1}},
	})
	if err != nil {
		t.Fatalf("CompleteBatch: %v", err)
	}
	for i, an := range done {
		if an.Err != nil {
			t.Fatalf("completion %d: %v", i, an.Err)
		}
	}
	if u := stored(lu); u != (lease.Usage{TokensIn: 70, TokensOut: 60, CostUSD: 0.25, ToolCalls: 3}) {
		t.Fatalf("under's final usage = %+v", u)
	}
	if u := stored(lf); u != (lease.Usage{TokensIn: 900, TokensOut: 7, ToolCalls: 1}) {
		t.Fatalf("free's final usage = %+v", u)
	}
	if u := ledger(); u.TokensIn != 70 || u.TokensOut != 60 {
		t.Fatalf("ledger after the completions = %+v, want 70 in, 60 out", u)
	}

	// A bad figure refuses the whole batch, naming the entry.
	_, err = f.leases.HeartbeatBatch(f.ctx, f.project, nil, []lease.HeartbeatEntry{
		{Fence: fence(lu)}, {Fence: fence(lf), Heartbeat: lease.Heartbeat{Usage: lease.Usage{TokensIn: -1}}},
	})
	var we *wgerr.Error
	if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != "heartbeats[1].usage" {
		t.Fatalf("a negative figure = %v, want invalid_argument naming heartbeats[1].usage", err)
	}
}

// TestDepthLimitEveryPath: a budget's depth limit holds for every way a
// child is created (an item created with a parent, a plan imported below
// a stored item, a decomposition), not only for decompose; a refusal
// changes nothing, and a child within the limit is created.
func TestDepthLimitEveryPath(t *testing.T) {
	t.Parallel()
	// root (budget: max depth 2) > mid (depth 1) > leaf (depth 2): a
	// child of leaf would be at depth 3.
	setupTree := func(t *testing.T) (fixture, graph.Item, graph.Item, graph.Item) {
		f := setup(t, lease.Config{})
		root := f.item(t, graph.NewItem{Title: "root"})
		mid := f.item(t, graph.NewItem{Title: "mid", ParentID: &root.ID})
		if _, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxDepth: ptr(2)}, "alice"); err != nil {
			t.Fatal(err)
		}
		leaf := f.item(t, graph.NewItem{Title: "leaf", ParentID: &mid.ID, Priority: 9})
		return f, root, mid, leaf
	}
	wantDepthLimit := func(t *testing.T, err error, budget uuid.UUID, depth int) {
		t.Helper()
		var we *wgerr.Error
		if !errors.As(err, &we) || we.Code != wgerr.CodeDepthLimit {
			t.Fatalf("got %v, want depth_limit", err)
		}
		if we.Details["budget_item_id"] != budget || we.Details["depth"] != depth || fmt.Sprint(we.Details["max_depth"]) != "2" {
			t.Fatalf("details %v, want budget %s, max_depth 2, depth %d", we.Details, budget, depth)
		}
	}
	t.Run("CreateItem", func(t *testing.T) {
		t.Parallel()
		f, root, mid, leaf := setupTree(t)
		before := f.snapshot(t, leaf.ID)
		_, err := f.graph.CreateItem(f.ctx, f.project, graph.NewItem{Title: "too deep", ParentID: &leaf.ID, CreatedBy: "bob"})
		wantDepthLimit(t, err, root.ID, 3)
		if after := f.snapshot(t, leaf.ID); after != before {
			t.Fatalf("a refused creation changed the parent:\n%s\n%s", before, after)
		}
		// At the limit is allowed.
		if _, err := f.graph.CreateItem(f.ctx, f.project, graph.NewItem{Title: "sibling of leaf", ParentID: &mid.ID, CreatedBy: "bob"}); err != nil {
			t.Fatalf("a child at depth 2 with a limit of 2: %v", err)
		}
	})
	t.Run("ImportPlan", func(t *testing.T) {
		t.Parallel()
		f, root, mid, _ := setupTree(t)
		// A plan keys a stored item by its plan key; give mid one.
		if _, err := f.conn.Exec(f.ctx, `UPDATE items SET plan_key = 'mid' WHERE id = $1`, mid.ID); err != nil {
			t.Fatal(err)
		}
		plan := []graph.PlanItem{{Key: "mid", Title: "mid", Children: []graph.PlanItem{
			{Key: "ok", Title: "at depth 2", Line: 3},
			{Key: "p", Title: "at depth 2 too", Line: 4, Children: []graph.PlanItem{{Key: "deep", Title: "at depth 3", Line: 5}}},
		}}}
		for _, dry := range []bool{true, false} {
			before := f.snapshot(t, mid.ID)
			_, err := f.graph.ImportPlan(f.ctx, f.project, plan, "bob", dry)
			wantDepthLimit(t, err, root.ID, 3)
			var we *wgerr.Error
			if errors.As(err, &we); we.Details["line"] != 5 || !strings.HasPrefix(we.Message, "line 5:") {
				t.Fatalf("dry run %v: %v (details %v), want the deepest item's line 5", dry, err, we.Details)
			}
			if after := f.snapshot(t, mid.ID); after != before {
				t.Fatalf("a refused import changed the stored parent:\n%s\n%s", before, after)
			}
		}
		plan[0].Children[1].Children = nil
		if _, err := f.graph.ImportPlan(f.ctx, f.project, plan, "bob", false); err != nil {
			t.Fatalf("a plan within the limit: %v", err)
		}
	})
	t.Run("Decompose", func(t *testing.T) {
		t.Parallel()
		f, root, _, leaf := setupTree(t)
		l := f.claimOf(t, "w", leaf.ID)
		before := f.snapshot(t, leaf.ID)
		_, err := f.leases.Decompose(f.ctx, f.project, fence(l), []graph.NewChild{{Key: "a", Title: "a"}})
		wantDepthLimit(t, err, root.ID, 3)
		if after := f.snapshot(t, leaf.ID); after != before {
			t.Fatalf("a refused decomposition changed the item:\n%s\n%s", before, after)
		}
	})
	t.Run("NoBudget", func(t *testing.T) {
		t.Parallel()
		f, _, _, _ := setupTree(t)
		other := f.item(t, graph.NewItem{Title: "other"})
		parent := other
		for range 4 { // no limit outside the budget's subtree
			parent = f.item(t, graph.NewItem{Title: "deeper", ParentID: &parent.ID})
		}
		// A budget without a depth limit limits no depth.
		if _, err := f.leases.SetBudget(f.ctx, f.project, other.ID, lease.BudgetLimits{MaxTokens: ptr[int64](5)}, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.graph.CreateItem(f.ctx, f.project, graph.NewItem{Title: "deepest", ParentID: &parent.ID, CreatedBy: "bob"}); err != nil {
			t.Fatalf("under a budget with no depth limit: %v", err)
		}
	})
}

// TestBudgetRaceWithNewChildren: a budget set on an item while children
// and grandchildren are being created under it covers every one of them,
// whichever commits first (runs statements concurrently: a database of
// its own). Each round sets a budget on a fresh root while creators add
// items under it and under the children already made.
func TestBudgetRaceWithNewChildren(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	const rounds, creators, perCreator = 12, 4, 6
	for round := 0; round < rounds; round++ {
		root := f.item(t, graph.NewItem{Title: fmt.Sprintf("root %d", round)})
		first := f.child(t, root.ID)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for c := 0; c < creators; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				<-start
				parent := root.ID
				if c%2 == 1 {
					parent = first.ID
				}
				for i := 0; i < perCreator; i++ {
					it, err := f.graph.CreateItem(f.ctx, f.project, graph.NewItem{Title: "child", ParentID: &parent, CreatedBy: "test"})
					if err != nil {
						t.Errorf("CreateItem: %v", err)
						return
					}
					if i%2 == 0 {
						parent = it.ID // the next one a level deeper
					}
				}
			}(c)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			time.Sleep(time.Duration(round%4) * time.Millisecond)
			if _, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxTokens: ptr[int64](1000)}, "alice"); err != nil {
				t.Errorf("SetBudget: %v", err)
			}
		}()
		close(start)
		wg.Wait()
		var missing, all int
		err := f.conn.QueryRow(f.ctx, `
			SELECT count(*) FILTER (WHERE NOT ($2::uuid = ANY (i.budget_roots))), count(*)
			FROM items i WHERE i.project_id = $1 AND i.id IN (SELECT s.id FROM item_subtree($1, $2) s)`,
			f.project, root.ID).Scan(&missing, &all)
		if err != nil {
			t.Fatal(err)
		}
		if all != 2+creators*perCreator {
			t.Fatalf("round %d: the subtree holds %d items, want %d", round, all, 2+creators*perCreator)
		}
		if missing > 0 {
			t.Fatalf("round %d: %d of the subtree's %d items are not under the budget set on its root", round, missing, all)
		}
	}
}

// TestBudgetAnsweredBeforeTheRefusal: a spent budget whose request was
// closed by an answer in words (before attention refused that) stayed
// stopped with nobody asked. Migration 00058 forgets the closed request,
// and the sweeper asks again. A new database of its own (setupFresh): it
// migrates down and up again.
func TestBudgetAnsweredBeforeTheRefusal(t *testing.T) {
	t.Parallel()
	f := setupFresh(t, lease.Config{})
	root := f.item(t, graph.NewItem{Title: "root"})
	f.child(t, root.ID)
	if _, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxTokens: ptr[int64](10)}, "alice"); err != nil {
		t.Fatal(err)
	}
	l := f.claim(t, "w1").Lease
	f.heartbeat(t, l, lease.Heartbeat{Usage: lease.Usage{TokensIn: 50}})
	old := f.requestsOf(t, root.ID, attention.ReasonBudgetExhausted)
	if len(old) != 1 || old[0].State != attention.StateOpen {
		t.Fatalf("requests = %+v, want one open", old)
	}
	// What an answer did before the refusal: the request closed, the
	// item's count of open blocking requests down by one.
	if _, err := f.pool.Exec(f.ctx, `UPDATE attention_requests SET state = 'resolved', answer = 'go on', resolved_by = 'alice', resolved_at = now()
		WHERE project_id = $1 AND id = $2`, f.project, old[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(f.ctx, `UPDATE items SET open_attention = open_attention - 1 WHERE project_id = $1 AND id = $2`, f.project, root.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.leases.AskSpentBudgets(f.ctx, 100); err != nil {
		t.Fatal(err)
	}
	if n := len(f.requestsOf(t, root.ID, attention.ReasonBudgetExhausted)); n != 1 {
		t.Fatalf("before the migration the sweeper opened %d more requests; this test no longer shows the stall", n-1)
	}
	if err := db.MigrateDownTo(f.ctx, f.pool, 54); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(f.ctx, f.pool, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.leases.AskSpentBudgets(f.ctx, 100); err != nil {
		t.Fatal(err)
	}
	var open []attention.Request
	for _, r := range f.requestsOf(t, root.ID, attention.ReasonBudgetExhausted) {
		if r.State == attention.StateOpen {
			open = append(open, r)
		}
	}
	if len(open) != 1 || open[0].ID == old[0].ID {
		t.Fatalf("open budget requests after the migration and a sweep = %+v, want one new one", open)
	}
	bud, err := f.leases.Budget(f.ctx, f.project, root.ID)
	if err != nil || bud.RequestID == nil || *bud.RequestID != open[0].ID {
		t.Fatalf("budget = %+v, %v; want it to point at the new request", bud, err)
	}
}

// A limit outside its range is refused naming it, and the item keeps no
// budget. A positive cost limit below half a micro-dollar would be stored
// as 0 (costs are kept to the micro-dollar), a budget already spent: it is
// refused, not rounded to a different meaning.
func TestBudgetLimitsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	root := f.item(t, graph.NewItem{Title: "root"})
	for _, c := range []struct {
		name  string
		lim   lease.BudgetLimits
		field string
	}{
		{"ErrCostRoundsToZero", lease.BudgetLimits{MaxCostUSD: ptr(1e-7)}, "max_cost_usd"},
		{"ErrCostBelowAMicroDollar", lease.BudgetLimits{MaxCostUSD: ptr(4.9e-7)}, "max_cost_usd"},
		{"ErrCostNegative", lease.BudgetLimits{MaxCostUSD: ptr(-1.0)}, "max_cost_usd"},
		{"ErrCostNaN", lease.BudgetLimits{MaxCostUSD: ptr(math.NaN())}, "max_cost_usd"},
		{"ErrTokensNegative", lease.BudgetLimits{MaxTokens: ptr[int64](-1)}, "max_tokens"},
		{"ErrWallUnderASecond", lease.BudgetLimits{MaxWall: ptr(time.Millisecond)}, "max_wall"},
		{"ErrDepth", lease.BudgetLimits{MaxDepth: ptr(1001)}, "max_depth"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.leases.SetBudget(f.ctx, f.project, root.ID, c.lim, "alice")
			var we *wgerr.Error
			if !errors.As(err, &we) || we.Code != wgerr.CodeInvalid || we.Field != c.field {
				t.Fatalf("SetBudget(%s) = %v, want invalid_argument naming %s", c.name, err, c.field)
			}
		})
	}
	if _, err := f.leases.Budget(f.ctx, f.project, root.ID); wgerr.CodeOf(err) != wgerr.CodeNotFound {
		t.Fatalf("the item's budget after refused limits: %v, want not_found (none was set)", err)
	}
	t.Run("OK", func(t *testing.T) {
		for _, v := range []float64{0, 1e-6, 5e-7} {
			b, err := f.leases.SetBudget(f.ctx, f.project, root.ID, lease.BudgetLimits{MaxCostUSD: ptr(v)}, "alice")
			if err != nil {
				t.Fatalf("SetBudget(max_cost_usd %g): %v", v, err)
			}
			if want := math.Round(v*1e6) / 1e6; b.Limits.MaxCostUSD == nil || *b.Limits.MaxCostUSD != want {
				t.Fatalf("max_cost_usd %g stored as %v, want %g", v, b.Limits.MaxCostUSD, want)
			}
		}
	})
}
