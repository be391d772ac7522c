package lease_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestReadyPayloadNamesItem: each item ready at commit sends its own
// notification "<project> <item>", also when one transaction makes
// several ready (a plan import), so a listener can count them.
func TestReadyPayloadNamesItem(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{}) // LISTENs
	listener, err := pgx.ConnectConfig(f.ctx, f.pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(f.ctx, "LISTEN workgraph_ready"); err != nil {
		t.Fatal(err)
	}
	res, err := f.graph.ImportPlan(f.ctx, f.project, []graph.PlanItem{
		{Key: "a", Title: "a"}, {Key: "b", Title: "b"}, {Key: "c", Title: "c", DependsOn: []string{"a"}},
	}, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, key := range []string{"a", "b"} {
		want[f.project.String()+" "+res.Keys[key].String()] = true
	}
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	for len(want) > 0 {
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("still waiting for %v: %v", want, err)
		}
		if !want[n.Payload] {
			t.Fatalf("unexpected notification %q (want %v)", n.Payload, want)
		}
		delete(want, n.Payload)
	}
}

// replicas starts n notifiers on f's database, standing for n server
// replicas that each LISTEN.
func replicas(t *testing.T, f fixture, n int, broadcast bool) []*lease.Notifier {
	t.Helper()
	out := make([]*lease.Notifier, n)
	for i := range out {
		nt := lease.NewNotifier(f.pool, nil)
		nt.BroadcastWakeups = broadcast
		nt.TestSignals.Listening.Init()
		nt.Start(context.Background())
		t.Cleanup(nt.Stop)
		nt.TestSignals.Listening.Wait(t)
		out[i] = nt
	}
	return out
}

type waitResult struct {
	worker string
	claim  lease.Claim
	err    error
}

// waitOn starts a waiting claim on nt, its result sent to out.
func waitOn(ctx context.Context, f fixture, nt *lease.Notifier, req lease.ClaimRequest, out chan<- waitResult) {
	go func() {
		c, err := f.leases.ClaimWait(ctx, f.project, req, time.Hour, nt)
		out <- waitResult{req.Worker, c, err}
	}()
}

// untilIdle waits until idle claims wait on each notifier (the claims
// that lost the race for the last item are waiting again).
func untilIdle(t *testing.T, f fixture, ns []*lease.Notifier, idle []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i, nt := range ns {
		for nt.Idle(f.project) != idle[i] {
			if time.Now().After(deadline) {
				t.Fatalf("notifier %d: %d idle waiting claims, want %d", i, nt.Idle(f.project), idle[i])
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}

func attempts(ns []*lease.Notifier) (tries, grants int64) {
	for _, nt := range ns {
		s := nt.Stats()
		tries += s.Attempts
		grants += s.Grants
	}
	return tries, grants
}

// TestWakeOneWaiterPerItem: 256 claims wait on two notifiers (two
// replicas) and items arrive one at a time; each item costs at most one
// claim transaction per replica (the wake-up goes to one waiting claim on
// each, not to all of them). The same trickle with BroadcastWakeups (the
// behaviour before) costs far more, which shows the count counts.
// Rechecks are off (an hour) so only wake-ups are counted.
func TestWakeOneWaiterPerItem(t *testing.T) {
	t.Parallel()
	const waiters, items = 256, 24
	for _, tc := range []struct {
		name      string
		broadcast bool
		check     func(t *testing.T, perGrant float64)
	}{
		{"OK", false, func(t *testing.T, perGrant float64) {
			if perGrant > 2 {
				t.Errorf("%.2f claim transactions per granted item with two replicas, want at most 2", perGrant)
			}
		}},
		{"Broadcast", true, func(t *testing.T, perGrant float64) {
			if perGrant < 10 {
				t.Errorf("broadcast wake-ups cost %.2f claim transactions per grant: the count does not see them", perGrant)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setupDB(t, lease.Config{WaitRecheck: time.Hour}) // LISTENs; 256 claims wait concurrently
			ns := replicas(t, f, 2, tc.broadcast)
			ctx, cancel := context.WithCancel(f.ctx)
			defer cancel()
			results := make(chan waitResult, waiters)
			for i := range waiters {
				waitOn(ctx, f, ns[i%2], lease.ClaimRequest{Worker: fmt.Sprintf("w%d", i)}, results)
			}
			idle := []int{waiters / 2, waiters / 2}
			untilIdle(t, f, ns, idle)
			tries0, grants0 := attempts(ns)
			got := map[uuid.UUID]bool{}
			for range items {
				it := f.item(t, graph.NewItem{})
				r := <-results
				if r.err != nil || r.claim.Item.ID != it.ID {
					t.Fatalf("ClaimWait = %v, %v; want item %v", r.claim.Item.ID, r.err, it.ID)
				}
				got[it.ID] = true
				var w int
				fmt.Sscanf(r.worker, "w%d", &w)
				idle[w%2]--
				untilIdle(t, f, ns, idle)
			}
			tries, grants := attempts(ns)
			if grants-grants0 != items {
				t.Fatalf("%d grants, want %d", grants-grants0, items)
			}
			perGrant := float64(tries-tries0) / float64(items)
			t.Logf("%d waiting claims, 2 notifiers: %.2f claim transactions per granted item", waiters, perGrant)
			tc.check(t, perGrant)
		})
	}
}

// TestNoWakeUpLost: every item is granted by wake-ups alone (rechecks are
// off) though the claims that waited longest cannot take any of them (a
// label no item carries), the others each take only the items of their
// label (cpu or gpu), two replicas each wake their own claims, and items
// arrive one at a time and many in one transaction. There are as many
// items of each label as claims that ask for it, so each of them must get
// one.
func TestNoWakeUpLost(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{WaitRecheck: time.Hour}) // LISTENs; claims wait concurrently
	ns := replicas(t, f, 2, false)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	const (
		blind = 20 // per notifier: a label no item has; they wait longest
		plain = 8  // per notifier: items labelled cpu
		gpu   = 8  // per notifier: items labelled gpu
	)
	blindResults := make(chan waitResult, 2*blind)
	results := make(chan waitResult, 2*(plain+gpu))
	idle := make([]int, len(ns))
	for i, nt := range ns {
		for j := range blind {
			waitOn(ctx, f, nt, lease.ClaimRequest{Worker: fmt.Sprintf("blind%d-%d", i, j), Labels: []string{"tpu"}}, blindResults)
		}
		idle[i] += blind
		untilIdle(t, f, ns, idle) // the blind claims are first in line
		for j := range plain {
			waitOn(ctx, f, nt, lease.ClaimRequest{Worker: fmt.Sprintf("cpu%d-%d", i, j), Labels: []string{"cpu"}}, results)
		}
		for j := range gpu {
			waitOn(ctx, f, nt, lease.ClaimRequest{Worker: fmt.Sprintf("gpu%d-%d", i, j), Labels: []string{"gpu"}}, results)
		}
		idle[i] += plain + gpu
	}
	untilIdle(t, f, ns, idle)

	want := map[uuid.UUID]bool{}
	// One at a time: gpu items first, so the claims that are woken for
	// them (the blind ones) must hand the wake-up to a gpu claim.
	for range gpu {
		want[f.item(t, graph.NewItem{Labels: []string{"gpu"}}).ID] = true
	}
	// Many in one transaction.
	var plan []graph.PlanItem
	for i := range 2*plain + gpu {
		p := graph.PlanItem{Key: fmt.Sprintf("k%d", i), Title: "batch", Labels: []string{"cpu"}}
		if i < gpu {
			p.Labels = []string{"gpu"}
		}
		plan = append(plan, p)
	}
	res, err := f.graph.ImportPlan(f.ctx, f.project, plan, "test", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range res.Keys {
		want[id] = true
	}
	if len(want) != cap(results) {
		t.Fatalf("%d items for %d claims", len(want), cap(results))
	}
	timeout := time.After(60 * time.Second)
	for range cap(results) {
		select {
		case r := <-results:
			if r.err != nil {
				t.Fatalf("%s: %v", r.worker, r.err)
			}
			if !want[r.claim.Item.ID] {
				t.Fatalf("%s got %v, granted twice or not one of the items", r.worker, r.claim.Item.ID)
			}
			delete(want, r.claim.Item.ID)
		case <-timeout:
			t.Fatalf("%d items were never granted to a waiting claim: a wake-up was lost", len(want))
		}
	}
	select {
	case r := <-blindResults:
		t.Fatalf("%s, whose label no item has, returned: %v, %v", r.worker, r.claim.Item.ID, r.err)
	default:
	}
	cancel()
	for range cap(blindResults) {
		if r := <-blindResults; !errors.Is(r.err, context.Canceled) && r.err == nil {
			t.Fatalf("%s: got %v", r.worker, r.claim.Item.ID)
		}
	}
}

// TestRecheckPassesOn: an item whose retry backoff ends opens without a
// write, so no notification tells of it; the periodic recheck (one claim
// per label set and round, whichever waiting claim's interval passes
// first) finds it for the one claim that can take it (a label) among many
// that cannot and that waited longer.
func TestRecheckPassesOn(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{WaitRecheck: 10 * time.Millisecond}) // LISTENs; claims wait concurrently
	ns := replicas(t, f, 1, false)
	it := f.item(t, graph.NewItem{Labels: []string{"gpu"}})
	c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "first", Labels: []string{"gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.Fail(f.ctx, f.project, fence(c.Lease), lease.Failure{Message: "try later"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	const blind = 16
	results := make(chan waitResult, blind+1)
	for i := range blind {
		waitOn(ctx, f, ns[0], lease.ClaimRequest{Worker: fmt.Sprintf("blind%d", i), Labels: []string{"tpu"}}, results)
	}
	untilIdle(t, f, ns, []int{blind})
	waitOn(ctx, f, ns[0], lease.ClaimRequest{Worker: "gpu", Labels: []string{"gpu"}}, results)
	untilIdle(t, f, ns, []int{blind + 1})
	f.clock.Advance(time.Hour) // past the retry backoff: no write, no notification
	select {
	case r := <-results:
		if r.err != nil || r.worker != "gpu" || r.claim.Item.ID != it.ID {
			t.Fatalf("%s: ClaimWait = %v, %v; want gpu to get %v", r.worker, r.claim.Item.ID, r.err, it.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no recheck granted the item whose backoff ended")
	}
}
