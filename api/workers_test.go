package api_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	leases "github.com/workgraph-dev/workgraph/lease"
)

// TestWorkersUnderChurn: the workers answer is one instant of the fleet
// while workers claim and release around it: each worker's active count
// is its leases among the live leases answered, and the activity names
// exactly those leases. (Its four reads each took their own snapshot, so
// a lease granted or ended between them was counted in one part and not
// the other.)
func TestWorkersUnderChurn(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.mustProject("churn")
	human := e.mustToken("churn", "watcher", "human")
	ctx := context.Background()
	pid := uuid.MustParse(p.ID)
	g, ls := graph.NewService(e.pool, nil), leases.NewService(e.pool, nil, leases.Config{})
	for i := range 12 {
		if _, err := g.CreateItem(ctx, pid, graph.NewItem{Title: fmt.Sprintf("item %d", i), CreatedBy: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				c, err := ls.Claim(ctx, pid, leases.ClaimRequest{Worker: fmt.Sprintf("w%d", w)})
				if errors.Is(err, leases.ErrNothingReady) {
					continue
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if _, err := ls.Release(ctx, pid, leases.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, "again"); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for n := 0; n < 150; n++ {
		var w struct {
			Active []struct {
				ID string `json:"id"`
			} `json:"active"`
			Workers []struct {
				Worker string `json:"worker"`
				Active int    `json:"active"`
			} `json:"workers"`
			Activity []struct {
				LeaseID string `json:"lease_id"`
			} `json:"activity"`
		}
		e.do("GET", "/v1/projects/churn/workers", human.Token, nil).ok(t, 200, &w)
		counted := 0
		for _, s := range w.Workers {
			counted += s.Active
		}
		live := map[string]bool{}
		for _, l := range w.Active {
			live[l.ID] = true
		}
		same := len(w.Activity) == len(w.Active)
		for _, a := range w.Activity {
			same = same && live[a.LeaseID]
		}
		if counted != len(w.Active) || !same {
			t.Fatalf("answer %d: %d live leases, the workers count %d active, the activity names %d (%v): not one instant",
				n, len(w.Active), counted, len(w.Activity), same)
		}
	}
}
