package lease_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestStorm runs claimers, completions, releases, failures, abandoned
// leases, stale calls, clock jumps and sweepers at once, and checks the
// invariants while it runs and after.
func TestStorm(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{ // concurrent claims
		MaxFailures: 1000, MaxExpiries: 1000,
		RetryBackoff: time.Second, MaxRetryBackoff: time.Second,
	})
	f.items(t, 150)

	const workers, rounds = 12, 40
	var stop atomic.Bool
	var background sync.WaitGroup
	background.Add(2)
	go func() { // two sweepers' worth of sweeping, concurrently with claims
		defer background.Done()
		w := lease.NewSweeper(f.leases, time.Hour, nil)
		for !stop.Load() {
			if _, err := w.RunOnce(f.ctx); err != nil {
				t.Errorf("sweep: %v", err)
			}
		}
	}()
	go func() {
		defer background.Done()
		for !stop.Load() {
			var dup int
			err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM (SELECT item_id FROM leases
				WHERE ended_at IS NULL GROUP BY item_id HAVING count(*) > 1) x`).Scan(&dup)
			if err != nil || dup != 0 {
				t.Errorf("two active leases on %d items (%v)", dup, err)
			}
		}
	}()

	var claims, completes, lost atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			worker := fmt.Sprintf("w%d", w)
			var abandoned []lease.Fence
			for r := 0; r < rounds; r++ {
				if rng.IntN(8) == 0 {
					f.clock.Advance(ttl / 2)
				}
				c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker})
				if errors.Is(err, lease.ErrNothingReady) {
					continue
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				claims.Add(1)
				fc := fence(c.Lease)
				switch p := rng.IntN(100); {
				case p < 40:
					_, err = f.leases.Complete(f.ctx, f.project, fc, json.RawMessage(fmt.Sprintf(`{"by":%q}`, worker)), nil)
					if err == nil {
						completes.Add(1)
					}
				case p < 55:
					_, err = f.leases.Release(f.ctx, f.project, fc, "")
				case p < 70:
					_, err = f.leases.Fail(f.ctx, f.project, fc, lease.Failure{Message: "x"})
				case p < 80:
					_, err = f.leases.Heartbeat(f.ctx, f.project, fc, lease.Heartbeat{})
					if err == nil {
						abandoned = append(abandoned, fc)
					}
				default:
					abandoned = append(abandoned, fc)
				}
				if err != nil && !errors.Is(err, wgerr.LeaseLost) {
					t.Errorf("mutation: %v", err)
				}
				// A stale incarnation speaks up now and then.
				if len(abandoned) > 0 && rng.IntN(3) == 0 {
					old := abandoned[rng.IntN(len(abandoned))]
					c, err := f.leases.Complete(f.ctx, f.project, old, json.RawMessage(`{"late":true}`), nil)
					switch {
					case errors.Is(err, wgerr.LeaseLost):
						lost.Add(1)
					case err == nil && !c.Replayed:
						completes.Add(1) // it had not expired yet
					case err == nil:
					case errors.Is(err, wgerr.ConflictingResult):
					default:
						t.Errorf("stale complete: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	background.Wait()
	t.Logf("%d claims, %d completions, %d stale calls refused", claims.Load(), completes.Load(), lost.Load())
	if claims.Load() < 100 || lost.Load() == 0 {
		t.Fatalf("storm too quiet: %d claims, %d refused stale calls", claims.Load(), lost.Load())
	}
	f.checkInvariants(t)
	var done, completedLeases, doneWithoutOne int
	err := f.conn.QueryRow(f.ctx, `
		SELECT (SELECT count(*) FROM items WHERE status = 'done'),
		       (SELECT count(*) FROM leases WHERE outcome = 'completed'),
		       (SELECT count(*) FROM items i WHERE status = 'done' AND
		          (SELECT count(*) FROM leases l WHERE l.item_id = i.id AND l.outcome = 'completed') <> 1)`).
		Scan(&done, &completedLeases, &doneWithoutOne)
	if err != nil || int64(done) != completes.Load() || completedLeases != done || doneWithoutOne != 0 {
		t.Fatalf("done %d, completed leases %d, acknowledged %d, items without exactly one completion %d (%v)",
			done, completedLeases, completes.Load(), doneWithoutOne, err)
	}
}
