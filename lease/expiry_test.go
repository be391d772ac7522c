package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

func TestMaxExpiries(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{MaxExpiries: 3})
	it := f.item(t, graph.NewItem{})

	for i := 1; i <= 3; i++ {
		f.claim(t, "flaky")
		f.clock.Advance(ttl)
		if i < 3 {
			// The next claim reaps the expired lease and hands the item out again.
			continue
		}
		// The third expiry, found by the sweeper: no more handing out.
		if n, err := lease.NewSweeper(f.leases, time.Hour, nil).RunOnce(f.ctx); err != nil || n != 1 {
			t.Fatalf("sweep = %d, %v", n, err)
		}
	}
	got := f.getItem(t, it.ID)
	if got.State != graph.StateAttention || len(got.BlockedBy.Attention) != 1 {
		t.Fatalf("item = %+v, want waiting for a person", got)
	}
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "fresh"}); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim: err = %v, want ErrNothingReady", err)
	}
	reqsPage, err := f.att.ForItem(f.ctx, f.project, it.ID, "", 0)
	reqs := reqsPage.Requests
	if err != nil || len(reqs) != 1 || reqs[0].Reason != attention.ReasonRepeatedExpiry || reqs[0].Source != attention.SourceSystem {
		t.Fatalf("requests = %+v, %v", reqs, err)
	}
	hist, _ := f.leases.History(f.ctx, f.project, lease.HistoryFilter{ItemID: &it.ID})
	if len(hist.Leases) != 3 || *reqs[0].LeaseID != hist.Leases[2].ID {
		t.Fatalf("history = %+v; the request should name the last expired lease", hist.Leases)
	}
	for _, l := range hist.Leases {
		if *l.Outcome != lease.OutcomeExpired {
			t.Fatalf("lease %v outcome %v", l.ID, *l.Outcome)
		}
	}
	// A person sends it back: the count starts again.
	if _, err := f.att.Resolve(f.ctx, f.project, reqs[0].ID, "retry", "alice"); err != nil {
		t.Fatal(err)
	}
	f.claim(t, "fresh")
	f.clock.Advance(ttl)
	if c := f.claim(t, "fresh"); c.Item.ID != it.ID {
		t.Fatal("item not handed out after a single expiry following the resolution")
	}

	t.Run("CompleteOrReleaseResetsCount", func(t *testing.T) {
		f := setup(t, lease.Config{MaxExpiries: 2})
		it := f.item(t, graph.NewItem{})
		for i := 0; i < 4; i++ {
			f.claim(t, "w")
			f.clock.Advance(ttl)
			l := f.claim(t, "w").Lease
			if _, err := f.leases.Release(f.ctx, f.project, fence(l), ""); err != nil {
				t.Fatal(err)
			}
		}
		if got := f.getItem(t, it.ID); got.State != graph.StateReady {
			t.Fatalf("item = %s, want ready (expiries never consecutive)", got.State)
		}
	})
}

// TestSweeper: two sweepers run at once over many expired leases in two
// projects; every lease is ended exactly once.
func TestSweeper(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{}) // two sweepers run concurrently
	other, err := f.graph.CreateProject(f.ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	const perProject = 40
	for _, p := range []fixture{f, f.in(other.ID)} {
		p.items(t, perProject)
		for i := 0; i < perProject; i++ {
			p.claim(t, "w")
		}
	}
	f.clock.Advance(ttl + time.Second)

	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := lease.NewSweeper(f.leases, time.Hour, nil).RunOnce(f.ctx)
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		}()
	}
	wg.Wait()
	if counts[0]+counts[1] != 2*perProject {
		t.Fatalf("sweepers ended %v leases, want %d in total", counts, 2*perProject)
	}
	var ended, active int
	err = f.conn.QueryRow(f.ctx, `SELECT count(*) FILTER (WHERE outcome = 'expired'), count(*) FILTER (WHERE ended_at IS NULL) FROM leases`).
		Scan(&ended, &active)
	if err != nil || ended != 2*perProject || active != 0 {
		t.Fatalf("expired %d, active %d (%v)", ended, active, err)
	}
	var ready int
	if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM items WHERE ready`).Scan(&ready); err != nil || ready != 2*perProject {
		t.Fatalf("%d ready items (%v), want all back in circulation", ready, err)
	}
	if n, err := lease.NewSweeper(f.leases, time.Hour, nil).RunOnce(f.ctx); err != nil || n != 0 {
		t.Fatalf("second sweep = %d, %v", n, err)
	}
	f.checkInvariants(t)
	f.in(other.ID).checkInvariants(t)
}

func TestSweeperStartStop(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{}) // the sweeper runs in its own goroutine
	it, _ := f.claimNew(t, "w")
	f.clock.Advance(ttl)
	w := lease.NewSweeper(f.leases, time.Millisecond, nil)
	w.TestSignals.Swept.Init()
	w.Start(context.Background())
	if n := w.TestSignals.Swept.Wait(t); n != 1 {
		t.Fatalf("the first sweep ended %d leases, want 1", n)
	}
	w.Stop()
	if st := f.getItem(t, it.ID).State; st != graph.StateReady {
		t.Fatalf("item %s after the sweep, want ready", st)
	}
	w.Stop() // a second Stop does nothing
}

// in is the fixture for another project of the same database.
func (f fixture) in(project uuid.UUID) fixture {
	f.project = project
	return f
}
