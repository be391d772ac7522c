package lease_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// noRecheck turns the periodic recheck off: only notifications wake a
// waiting claim.
const noRecheck = time.Hour

// startWaitNotifier starts a notifier with its Idle, Notified and Due
// signals on.
func startWaitNotifier(t *testing.T, f fixture) *lease.Notifier {
	t.Helper()
	n := lease.NewNotifier(f.pool, nil)
	n.TestSignals.Listening.Init()
	n.TestSignals.Idle.Init()
	n.TestSignals.Notified.Init()
	n.TestSignals.Due.Init()
	n.Start(context.Background())
	t.Cleanup(n.Stop)
	n.TestSignals.Listening.Wait(t)
	return n
}

type waitResult struct {
	worker string
	c      lease.Claim
	err    error
}

// waitOn starts a waiting claim on n that reports to out.
func waitOn(f fixture, n *lease.Notifier, req lease.ClaimRequest, wait time.Duration, out chan<- waitResult) {
	go func() {
		c, err := f.leases.ClaimWait(f.ctx, f.project, req, wait, n)
		out <- waitResult{req.Worker, c, err}
	}()
}

// TestWakeOneWaiterPerItem: with N claims waiting on one notifier and items
// made ready one at a time (each grant awaited, and the waiters idle again,
// before the next), each item costs exactly one claim transaction beyond
// the first claim every wait makes; with two notifiers (two replicas) each
// gives the item to one of its own waiters, so exactly two. Waking every
// waiter of the project costs one claim per waiter instead.
func TestWakeOneWaiterPerItem(t *testing.T) {
	t.Parallel()
	const waiters, items = 12, 6
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("Replicas%d", replicas), func(t *testing.T) {
			t.Parallel()
			f := setupDB(t, lease.Config{WaitRecheck: noRecheck}) // LISTENs; claims wait concurrently
			ns := make([]*lease.Notifier, replicas)
			for i := range ns {
				ns[i] = startWaitNotifier(t, f)
			}
			out := make(chan waitResult, waiters*replicas)
			for i, n := range ns {
				for w := range waiters {
					waitOn(f, n, lease.ClaimRequest{Worker: fmt.Sprintf("r%d-w%d", i, w)}, time.Minute, out)
				}
				for range waiters {
					n.TestSignals.Idle.Wait(t)
				}
			}
			claims := func() (c int64) {
				for _, n := range ns {
					c += n.Stats().Claims
				}
				return c
			}
			before := claims()
			if before != int64(waiters*replicas) {
				t.Fatalf("%d claims before any item, want one per wait (%d)", before, waiters*replicas)
			}
			for k := range items {
				it := f.item(t, graph.NewItem{Title: fmt.Sprintf("trickle %d", k)})
				select {
				case r := <-out:
					if r.err != nil || r.c.Item.ID != it.ID {
						t.Fatalf("%s: ClaimWait = %v, %v; want %v", r.worker, r.c.Item.ID, r.err, it.ID)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("item %d was not granted", k)
				}
				// Every notifier has handed out its turn for the item: the
				// grant can come from one notifier's waiter before the
				// notification reaches another. Then the other replica's
				// woken claim finds nothing and waits again.
				for _, n := range ns {
					n.TestSignals.Notified.Wait(t)
				}
				settled(t, f, ns, waiters*replicas-(k+1))
			}
			got := claims() - before
			if want := int64(items * replicas); got != want {
				stats := make([]lease.WaitStats, len(ns))
				for i, n := range ns {
					stats[i] = n.Stats()
				}
				t.Errorf("%d claim transactions for %d items with %d waiters on %d notifier(s), want %d (one per notifier per item); stats %+v",
					got, items, waiters, replicas, want, stats)
			}
			var grants int64
			for _, n := range ns {
				grants += n.Stats().Grants
			}
			if grants != items {
				t.Errorf("grants = %d, want %d", grants, items)
			}
			// Each woken claim took the item it was woken for or found
			// nothing: none had a wake-up to hand on.
			for i, n := range ns {
				if s := n.Stats(); s.Passed != 0 {
					t.Errorf("notifier %d: %d wake-ups passed on, want 0 (stats %+v)", i, s.Passed, s)
				}
			}
		})
	}
}

// settled waits until idle waiters of f's project on ns number idle. The
// count alone does not tell a notifier that has yet to hand out a turn from
// one whose woken claim already waits again: a caller that means the
// latter first waits for the notification (TestSignals.Notified).
func settled(t *testing.T, f fixture, ns []*lease.Notifier, idle int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := 0
		for _, n := range ns {
			got += n.IdleWaiters(f.project)
		}
		if got == idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters idle, want %d", got, idle)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestWakeLabelFilter: an item goes to a waiter whose labels it carries,
// and a reserved item to the reserved worker, whoever waited longest.
func TestWakeLabelFilter(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{WaitRecheck: noRecheck}) // LISTENs; claims wait concurrently
	n := startWaitNotifier(t, f)
	out := make(chan waitResult, 8)
	for _, w := range []lease.ClaimRequest{
		{Worker: "gpu-1", Labels: []string{"gpu"}},
		{Worker: "cpu-1", Labels: []string{"cpu"}},
		{Worker: "any-1"},
	} {
		waitOn(f, n, w, time.Minute, out)
		n.TestSignals.Idle.Wait(t)
	}
	before := n.Stats().Claims
	it := f.item(t, graph.NewItem{Labels: []string{"cpu"}})
	r := <-out
	if r.err != nil || r.worker != "cpu-1" || r.c.Item.ID != it.ID {
		t.Fatalf("%s: %v, %v; want cpu-1 to get %v", r.worker, r.c.Item.ID, r.err, it.ID)
	}
	if got := n.Stats().Claims - before; got != 1 {
		t.Errorf("%d claims for one cpu item, want 1 (the gpu waiter must not be woken)", got)
	}
}

// TestNoWakeUpLost: many claims wait on two notifiers (two replicas) with
// different label filters, some give up early, plain claims take items
// behind their backs, and producers make items ready concurrently with
// random priorities (so a woken claim often takes another item than the
// one it was woken for and must hand its wake-up on). With the recheck
// off, every item must still be granted: a lost wake-up leaves an item
// ready with every waiter asleep. Each waiter takes at most one item and
// does not come back, so no later first claim rescues a lost item.
func TestNoWakeUpLost(t *testing.T) {
	t.Parallel()
	for _, replicas := range []int{1, 2} {
		for _, again := range []bool{false, true} {
			name := fmt.Sprintf("Replicas%d", replicas)
			if again {
				name += "WaitAgain"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				noWakeUpLost(t, replicas, again)
			})
		}
	}
}

// noWakeUpLost runs TestNoWakeUpLost's scenario; with again, a waiter that
// was granted an item completes it and waits again (without a first claim
// when its filter's last claim found nothing).
func noWakeUpLost(t *testing.T, replicas int, again bool) {
	f := setupDB(t, lease.Config{WaitRecheck: noRecheck}) // LISTENs; commits concurrently
	var ns []*lease.Notifier
	for range replicas {
		ns = append(ns, startWaitNotifier(t, f))
	}
	// Few waiters, so that items often arrive while every waiter that
	// could take them is busy claiming.
	labelSets := [][]string{{"a"}, {"b"}}
	const perSet, producers, perProducer, stolen = 12, 4, 4, 3
	total := producers * perProducer
	out := make(chan waitResult, perSet*len(labelSets)*2)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	waiting := 0
	for i, n := range ns {
		for s, labels := range labelSets {
			for w := range perSet {
				wait := time.Minute
				if w%6 == 5 {
					// Impatient: leaves during the run, perhaps holding a
					// turn it was just given.
					wait = time.Duration(200+rand.IntN(1500)) * time.Millisecond
				}
				req := lease.ClaimRequest{Worker: fmt.Sprintf("r%d-s%d-w%d", i, s, w), Labels: labels}
				go func() {
					for {
						c, err := f.leases.ClaimWait(ctx, f.project, req, wait, n)
						out <- waitResult{req.Worker, c, err}
						if err != nil || !again {
							return
						}
						if _, err := f.leases.Complete(ctx, f.project, fence(c.Lease), nil, nil); err != nil {
							return
						}
					}
				}()
				waiting++
			}
		}
	}
	for _, n := range ns {
		for range perSet * len(labelSets) {
			n.TestSignals.Idle.Wait(t)
		}
	}
	kinds := [][]string{{"a"}, {"b"}, {"a", "b"}, {"b", "a", "c"}}
	var wg, thief sync.WaitGroup
	var mu sync.Mutex
	made := map[uuid.UUID]bool{}
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perProducer {
				it, err := f.graph.CreateItem(f.ctx, f.project, graph.NewItem{
					Title: fmt.Sprintf("p%d-%d", p, k), CreatedBy: "test",
					Labels: kinds[(p+k)%len(kinds)], Priority: rand.Int32N(5),
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				made[it.ID] = true
				mu.Unlock()
			}
		}()
	}
	// Plain claims (no wait, no notifier) take some items behind the
	// waiters' backs while the producers run.
	took := map[uuid.UUID]bool{}
	producing := make(chan struct{})
	thief.Add(1)
	go func() {
		defer thief.Done()
		for len(took) < stolen {
			c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "thief"})
			if errors.Is(err, lease.ErrNothingReady) {
				select {
				case <-producing:
					return // the producers are done
				default:
					continue
				}
			}
			if err != nil {
				t.Error(err)
				return
			}
			took[c.Item.ID] = true
		}
	}()
	wg.Wait()
	close(producing)
	thief.Wait()
	granted := map[uuid.UUID]string{}
	for id := range took {
		granted[id] = "thief"
	}
	timeout := time.After(30 * time.Second) // a safety net, not a speed bound
	for len(granted) < total {
		select {
		case r := <-out:
			if !again || r.err != nil {
				waiting--
			}
			switch {
			case r.err == nil:
				if prev, dup := granted[r.c.Item.ID]; dup {
					t.Fatalf("item %v granted to %s and %s", r.c.Item.ID, prev, r.worker)
				}
				granted[r.c.Item.ID] = r.worker
			case !errors.Is(r.err, lease.ErrNothingReady):
				t.Fatalf("%s: %v (cause: %v)", r.worker, r.err, errors.Unwrap(r.err))
			}
		case <-timeout:
			var ready int
			if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND ready`, f.project).Scan(&ready); err != nil {
				t.Fatal(err)
			}
			t.Fatalf("%d of %d items granted; %d still ready with %d claims waiting: a wake-up was lost",
				len(granted), total, ready, waiting)
		}
	}
	for id := range made {
		if granted[id] == "" {
			t.Errorf("item %v was never granted", id)
		}
	}
}

// TestWakeRejoin: a claim that waits again after its grant, with the same
// filter as its wait before (which found nothing), needs no first claim;
// but one that may have missed an item (a reserved item it could take
// became ready while it did not wait, and no waiter could take it) claims
// first.
func TestWakeRejoin(t *testing.T) {
	t.Parallel()
	t.Run("SkipsItsFirstClaim", func(t *testing.T) {
		t.Parallel()
		const waiters, items = 8, 6
		f := setupDB(t, lease.Config{WaitRecheck: noRecheck}) // LISTENs; claims wait concurrently
		n := startWaitNotifier(t, f)
		out := make(chan waitResult, waiters)
		reqs := map[string]lease.ClaimRequest{}
		for w := range waiters {
			req := lease.ClaimRequest{Worker: fmt.Sprintf("w%d", w)}
			reqs[req.Worker] = req
			waitOn(f, n, req, time.Minute, out)
			n.TestSignals.Idle.Wait(t)
		}
		before := n.Stats().Claims
		for k := range items {
			it := f.item(t, graph.NewItem{Title: fmt.Sprintf("trickle %d", k)})
			r := <-out
			if r.err != nil || r.c.Item.ID != it.ID {
				t.Fatalf("%s: ClaimWait = %v, %v; want %v", r.worker, r.c.Item.ID, r.err, it.ID)
			}
			waitOn(f, n, reqs[r.worker], time.Minute, out)
			settled(t, f, []*lease.Notifier{n}, waiters)
		}
		if got := n.Stats().Claims - before; got != items {
			t.Errorf("%d claim transactions for %d items with waiters that wait again, want %d", got, items, items)
		}
		if s := n.Stats(); s.Skipped != items {
			t.Errorf("%d waits skipped their first claim, want %d", s.Skipped, items)
		}
	})
	t.Run("ClaimsAfterAReservationItMissed", func(t *testing.T) {
		t.Parallel()
		f := setupDB(t, lease.Config{WaitRecheck: noRecheck}) // LISTENs; claims wait concurrently
		n := lease.NewNotifier(f.pool, nil)
		n.TestSignals.Listening.Init()
		n.TestSignals.Idle.Init()
		n.TestSignals.Notified.Init()
		n.Start(context.Background())
		t.Cleanup(n.Stop)
		n.TestSignals.Listening.Wait(t)
		labels := []string{"t-" + uuid.NewString()[:8]}
		k := lease.ClaimRequest{Worker: "k", Labels: labels}
		out := make(chan waitResult, 4)
		waitOn(f, n, k, time.Minute, out)
		n.TestSignals.Idle.Wait(t)
		waitOn(f, n, lease.ClaimRequest{Worker: "other", Labels: labels}, time.Minute, out)
		n.TestSignals.Idle.Wait(t)
		it := f.item(t, graph.NewItem{Labels: labels})
		n.TestSignals.Notified.Wait(t)
		r := <-out
		if r.err != nil || r.worker != "k" || r.c.Item.ID != it.ID {
			t.Fatalf("%s: %v, %v; want k (waiting longest) to get %v", r.worker, r.c.Item.ID, r.err, it.ID)
		}
		// The item comes back reserved for k while k does not wait: no
		// waiter can take it.
		f.resolve(t, f.ask(t, r.c.Lease, "which way?", true).Request, "left")
		n.TestSignals.Notified.Wait(t)
		c, err := f.leases.ClaimWait(f.ctx, f.project, k, 3*time.Second, n)
		if err != nil || c.Item.ID != it.ID {
			t.Fatalf("k waiting again: %v, %v; want the item reserved for it", c.Item.ID, err)
		}
	})
}

// TestWakeRecheckRounds: a time gate that opens without a write (the end
// of a retry backoff) is found by the recheck round even when every wait
// is shorter than the recheck interval and skips its first claim (two
// pollers overlap, so the label set always has a waiter).
func TestWakeRecheckRounds(t *testing.T) {
	t.Parallel()
	const every = 200 * time.Millisecond
	f := setupDB(t, lease.Config{WaitRecheck: every, RetryBackoff: time.Minute}) // LISTENs; claims wait concurrently
	n := startWaitNotifier(t, f)
	labels := []string{"t-" + uuid.NewString()[:8]}
	it := f.item(t, graph.NewItem{Labels: labels})
	c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "first", Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.Fail(f.ctx, f.project, fence(c.Lease), lease.Failure{Message: "flaky"}); err != nil {
		t.Fatal(err)
	}
	// The item is ready behind its backoff.
	ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
	defer cancel()
	got := make(chan lease.Claim, 2)
	for i := range 2 {
		go func() {
			req := lease.ClaimRequest{Worker: fmt.Sprintf("poller-%d", i), Labels: labels}
			time.Sleep(time.Duration(i) * every / 4) // overlap the other poller
			for ctx.Err() == nil {
				c, err := f.leases.ClaimWait(ctx, f.project, req, every/2, n)
				if err == nil {
					got <- c
					return
				}
			}
		}()
	}
	time.Sleep(every) // let both poll (and skip) a while before the gate opens
	f.clock.Advance(2 * time.Minute)
	select {
	case c := <-got:
		if c.Item.ID != it.ID {
			t.Fatalf("granted %v, want %v", c.Item.ID, it.ID)
		}
	case <-ctx.Done():
		t.Fatalf("short polls never found the item whose backoff passed (stats %+v)", n.Stats())
	}
	if s := n.Stats(); s.Rechecks == 0 {
		t.Errorf("stats %+v: want a recheck round", s)
	}
}
