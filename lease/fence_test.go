package lease_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// mutation is one fenced worker call.
type mutation struct {
	name string
	call func(f fixture, fc lease.Fence) error
}

// mutations are every fenced worker call, each with valid input.
var mutations = []mutation{
	{"heartbeat", func(f fixture, fc lease.Fence) error {
		_, err := f.leases.Heartbeat(f.ctx, f.project, fc, lease.Heartbeat{Progress: json.RawMessage(`{"step":9}`)})
		return err
	}},
	{"complete", func(f fixture, fc lease.Fence) error {
		_, err := f.leases.Complete(f.ctx, f.project, fc, json.RawMessage(`{"stale":true}`), nil)
		return err
	}},
	{"release", func(f fixture, fc lease.Fence) error {
		_, err := f.leases.Release(f.ctx, f.project, fc, "stale")
		return err
	}},
	{"fail", func(f fixture, fc lease.Fence) error {
		_, err := f.leases.Fail(f.ctx, f.project, fc, lease.Failure{Message: "stale"})
		return err
	}},
	{"decompose", func(f fixture, fc lease.Fence) error {
		_, err := f.leases.Decompose(f.ctx, f.project, fc, []graph.NewChild{{Key: "a", Title: "child"}})
		return err
	}},
	{"ask", func(f fixture, fc lease.Fence) error {
		_, err := f.leases.Ask(f.ctx, f.project, fc, attention.NewRequest{Question: "stale?", Blocking: true})
		return err
	}},
	{"ask non-blocking", func(f fixture, fc lease.Fence) error {
		_, err := f.leases.Ask(f.ctx, f.project, fc, attention.NewRequest{Question: "stale?"})
		return err
	}},
}

// TestStaleIncarnation: the same worker label claims again after its lease
// expired; the old incarnation is refused on every mutation and changes
// nothing.
func TestStaleIncarnation(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	it := f.item(t, graph.NewItem{})
	old := f.claim(t, "agent-1").Lease
	f.clock.Advance(ttl + time.Second)
	cur := f.claim(t, "agent-1").Lease
	if cur.ItemID != it.ID || cur.Epoch != old.Epoch+1 {
		t.Fatalf("re-claim = %+v, want the same item at epoch %d", cur, old.Epoch+1)
	}
	if l := f.getLease(t, old.ID); l.Outcome == nil || *l.Outcome != lease.OutcomeExpired || !l.EndedAt.Equal(old.ExpiresAt) {
		t.Fatalf("old lease = %+v, want ended as expired at its expiry", l)
	}
	before := f.snapshot(t, it.ID)
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			err := m.call(f, fence(old))
			if !errors.Is(err, wgerr.LeaseLost) {
				t.Fatalf("err = %v, want lease_lost", err)
			}
			if after := f.snapshot(t, it.ID); after != before {
				t.Fatalf("stored state changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// The current incarnation is unaffected.
	if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(cur), lease.Heartbeat{}); err != nil {
		t.Fatalf("current heartbeat: %v", err)
	}
	if got := f.getLease(t, old.ID).StaleCalls; got != len(mutations) {
		t.Fatalf("stale calls = %d, want %d", got, len(mutations))
	}
	obs, err := observationsOf(f.ctx, f.leases, f.project, old.ID)
	if err != nil || len(obs) != len(mutations) || obs[0].Kind != "stale_call" || obs[0].Operation != "heartbeat" {
		t.Fatalf("observations = %+v, %v", obs, err)
	}
	f.checkInvariants(t)
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})

	t.Run("OK", func(t *testing.T) {
		_, l := f.claimNew(t, "w")
		f.clock.Advance(ttl - time.Second)
		wt := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
		hb, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{
			Progress: json.RawMessage(`{"done":3}`), WorkerTime: &wt,
		})
		if err != nil {
			t.Fatal(err)
		}
		now := *f.clock.Now()
		if !hb.Lease.ExpiresAt.Equal(now.Add(ttl)) || hb.Lease.Heartbeats != 1 || !hb.Lease.HeartbeatAt.Equal(now) ||
			string(hb.Lease.Progress) != `{"done": 3}` || !hb.Lease.WorkerTime.Equal(wt) || hb.StopRequested {
			t.Fatalf("heartbeat = %+v", hb)
		}
		// A named TTL, then the lease keeps it.
		f.clock.Advance(time.Second)
		hb, err = f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{TTL: 5 * time.Minute})
		if err != nil || !hb.Lease.ExpiresAt.Equal(f.clock.Now().Add(5*time.Minute)) {
			t.Fatalf("heartbeat with TTL = %+v, %v", hb.Lease, err)
		}
		f.clock.Advance(time.Second)
		hb, err = f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{})
		if err != nil || !hb.Lease.ExpiresAt.Equal(f.clock.Now().Add(5*time.Minute)) || string(hb.Lease.Progress) != `{"done": 3}` {
			t.Fatalf("heartbeat keeping TTL = %+v, %v", hb.Lease, err)
		}
	})
	t.Run("ErrAfterExpiry", func(t *testing.T) {
		it, l := f.claimNew(t, "w")
		f.clock.Advance(ttl) // exactly at expiry: expired
		before := f.snapshot(t, it.ID)
		_, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{})
		if !errors.Is(err, wgerr.LeaseLost) {
			t.Fatalf("err = %v, want lease_lost", err)
		}
		if after := f.snapshot(t, it.ID); after != before {
			t.Fatalf("refused heartbeat changed state:\n%s\n%s", before, after)
		}
		// Not resurrected later either, and the sweeper ends it.
		if _, err := f.leases.ReapExpired(f.ctx, f.project, 0); err != nil {
			t.Fatal(err)
		}
		if got := f.getLease(t, l.ID); got.Outcome == nil || *got.Outcome != lease.OutcomeExpired {
			t.Fatalf("lease = %+v, want expired", got)
		}
		if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{}); !errors.Is(err, wgerr.LeaseLost) {
			t.Fatalf("after reap: err = %v, want lease_lost", err)
		}
	})
	t.Run("ErrTTL", func(t *testing.T) {
		_, l := f.claimNew(t, "w")
		_, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{TTL: 48 * time.Hour})
		if !errors.Is(err, wgerr.Invalid) {
			t.Fatalf("err = %v, want invalid_argument", err)
		}
	})
	t.Run("StopRequested", func(t *testing.T) {
		_, l := f.claimNew(t, "w")
		if _, err := f.leases.RequestStop(f.ctx, f.project, l.ID, "alice", ""); err != nil {
			t.Fatal(err)
		}
		hb, err := f.leases.Heartbeat(f.ctx, f.project, fence(l), lease.Heartbeat{})
		if err != nil || !hb.StopRequested || hb.Lease.EndedAt != nil {
			t.Fatalf("heartbeat = %+v, %v; want stop requested on a live lease", hb, err)
		}
		if _, err := f.leases.Release(f.ctx, f.project, fence(l), "asked to stop"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.leases.RequestStop(f.ctx, f.project, l.ID, "alice", ""); !errors.Is(err, wgerr.Conflict) {
			t.Fatalf("stop on ended lease: err = %v, want conflict", err)
		}
	})
}

// TestFencePaused is the fault test: worker A holds its fence while paused
// past expiry, B claims the item, A resumes and tries every mutation at
// once; all are refused and the stored state is exactly B's.
func TestFencePaused(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{}) // a paused transaction races others
	it := f.item(t, graph.NewItem{})

	paused, resume := make(chan lease.Fence), make(chan struct{})
	results := make(chan error, len(mutations))
	go func() {
		// Worker A: claim, read the fence, then stall before writing.
		c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "A"})
		if err != nil {
			t.Error(err)
			close(paused)
			return
		}
		paused <- fence(c.Lease)
		<-resume
		var wg sync.WaitGroup
		for _, m := range mutations {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results <- m.call(f, fence(c.Lease))
			}()
		}
		wg.Wait()
		close(results)
	}()
	a, ok := <-paused
	if !ok {
		t.FailNow()
	}

	f.clock.Advance(ttl + time.Millisecond)
	b := f.claim(t, "B").Lease
	if b.ItemID != it.ID || b.Epoch <= a.Epoch {
		t.Fatalf("B's lease = %+v, want the item at an epoch above %d", b, a.Epoch)
	}
	if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(b), lease.Heartbeat{Progress: json.RawMessage(`{"b":1}`)}); err != nil {
		t.Fatal(err)
	}
	bState := f.snapshot(t, it.ID)

	close(resume)
	n := 0
	for err := range results {
		n++
		if !errors.Is(err, wgerr.LeaseLost) {
			t.Errorf("A's call: err = %v, want lease_lost", err)
		}
	}
	if n != len(mutations) {
		t.Fatalf("%d results", n)
	}
	if after := f.snapshot(t, it.ID); after != bState {
		t.Fatalf("A changed the stored state:\nB's  %s\nnow  %s", bState, after)
	}
	got := f.getItem(t, it.ID)
	if got.ActiveLeaseID == nil || *got.ActiveLeaseID != b.ID || got.Epoch != b.Epoch {
		t.Fatalf("item = %+v, want held by B", got)
	}
	// B finishes normally.
	if _, err := f.leases.Complete(f.ctx, f.project, fence(b), json.RawMessage(`{"by":"B"}`), nil); err != nil {
		t.Fatalf("B complete: %v", err)
	}
	f.checkInvariants(t)
}

func TestFenceRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	it, l := f.claimNew(t, "w")

	t.Run("ErrInvalidEpoch", func(t *testing.T) {
		for _, epoch := range []int64{0, -1} {
			for _, m := range mutations {
				if err := m.call(f, lease.Fence{LeaseID: l.ID, Epoch: epoch}); !errors.Is(err, wgerr.Invalid) {
					t.Errorf("%s epoch %d: err = %v, want invalid_argument", m.name, epoch, err)
				}
			}
		}
	})
	t.Run("ErrUnknownLease", func(t *testing.T) {
		for _, m := range mutations {
			if err := m.call(f, lease.Fence{LeaseID: uuid.New(), Epoch: 1}); !errors.Is(err, wgerr.NotFound) {
				t.Errorf("%s: err = %v, want not_found", m.name, err)
			}
		}
	})
	t.Run("ErrOtherProject", func(t *testing.T) {
		other, err := f.graph.CreateProject(f.ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.leases.Heartbeat(f.ctx, other.ID, fence(l), lease.Heartbeat{})
		if !errors.Is(err, wgerr.NotFound) {
			t.Fatalf("err = %v, want not_found", err)
		}
	})
	t.Run("ErrWrongEpoch", func(t *testing.T) {
		before := f.snapshot(t, it.ID)
		for _, m := range mutations {
			if err := m.call(f, lease.Fence{LeaseID: l.ID, Epoch: l.Epoch + 1}); !errors.Is(err, wgerr.LeaseLost) {
				t.Errorf("%s: err = %v, want lease_lost", m.name, err)
			}
		}
		if after := f.snapshot(t, it.ID); after != before {
			t.Fatalf("state changed:\n%s\n%s", before, after)
		}
	})
	t.Run("StaleCallsCapped", func(t *testing.T) {
		_, gone := f.claimNew(t, "x")
		if _, err := f.leases.Release(f.ctx, f.project, fence(gone), ""); err != nil {
			t.Fatal(err)
		}
		const calls = 30
		var last time.Time
		for i := 0; i < calls; i++ {
			f.clock.Advance(time.Second)
			progress := json.RawMessage(fmt.Sprintf(`{"call":%d}`, i+1))
			if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(gone), lease.Heartbeat{Progress: progress}); !errors.Is(err, wgerr.LeaseLost) {
				t.Fatalf("err = %v", err)
			}
			last = *f.clock.Now()
		}
		obs, err := observationsOf(f.ctx, f.leases, f.project, gone.ID)
		if err != nil || len(obs) != 25 {
			t.Fatalf("%d observations (%v), want the first 20 and the last 5", len(obs), err)
		}
		if !obs[len(obs)-1].ReceivedAt.Equal(last) {
			t.Fatalf("the newest observation was received at %v, want the last call's %v", obs[len(obs)-1].ReceivedAt, last)
		}
		if !obs[20].ReceivedAt.Equal(last.Add(-4*time.Second)) || obs[20].Operation != "heartbeat" {
			t.Fatalf("the 21st observation %+v, want the 26th call", obs[20])
		}
		for i := 1; i < len(obs); i++ {
			if obs[i].ReceivedAt.Before(obs[i-1].ReceivedAt) {
				t.Fatalf("observations out of order at %d", i)
			}
		}
		if got := f.getLease(t, gone.ID).StaleCalls; got != calls {
			t.Fatalf("stale calls = %d, want %d counted", got, calls)
		}
	})
}

// TestEpochsIncrease: every claim of an item has a larger epoch than the
// one before, whoever claims and however the previous lease ended.
func TestEpochsIncrease(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{MaxExpiries: 100, MaxFailures: 100, RetryBackoff: time.Millisecond, MaxRetryBackoff: time.Millisecond})
	it := f.item(t, graph.NewItem{})
	var last int64
	for i := 0; i < 12; i++ {
		c := f.claim(t, []string{"a", "b", "c"}[i%3])
		if c.Item.ID != it.ID || c.Lease.Epoch <= last || c.Item.Epoch != c.Lease.Epoch {
			t.Fatalf("claim %d: epoch %d after %d (item epoch %d)", i, c.Lease.Epoch, last, c.Item.Epoch)
		}
		last = c.Lease.Epoch
		switch i % 3 {
		case 0:
			f.clock.Advance(ttl)
		case 1:
			if _, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), ""); err != nil {
				t.Fatal(err)
			}
		case 2:
			if _, err := f.leases.Fail(f.ctx, f.project, fence(c.Lease), lease.Failure{Message: "x"}); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(time.Second)
		}
	}
	f.checkInvariants(t)
}
