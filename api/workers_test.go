package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
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

// TestWorkersPaged: the workers answer is a page of workers in name order
// (limit, default 50, at most 500; an opaque cursor): paging through 57
// workers, some with live leases and some with ended ones only, sees each
// once, with its counts; the live leases answered are those of the page's
// workers. It listed every worker that ever held a lease in one answer.
func TestWorkersPaged(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := e.mustProject("fleet")
	human := e.mustToken("fleet", "watcher", "human")
	ctx := context.Background()
	pid := uuid.MustParse(p.ID)
	g, ls := graph.NewService(e.pool, nil), leases.NewService(e.pool, nil, leases.Config{})
	const n = 57
	want := map[string]int{} // worker: live leases
	for i := range n {
		if _, err := g.CreateItem(ctx, pid, graph.NewItem{Title: fmt.Sprintf("item %d", i), CreatedBy: "test"}); err != nil {
			t.Fatal(err)
		}
		w := fmt.Sprintf("worker-%02d", (i*37)%n) // claimed out of name order
		c, err := ls.Claim(ctx, pid, leases.ClaimRequest{Worker: w})
		if err != nil {
			t.Fatal(err)
		}
		want[w] = 1
		if i%3 != 0 {
			if _, err := ls.Complete(ctx, pid, leases.Fence{LeaseID: c.Lease.ID, Epoch: c.Lease.Epoch}, json.RawMessage(`{}`), nil); err != nil {
				t.Fatal(err)
			}
			want[w] = 0
		}
	}
	type page struct {
		Active []struct {
			ID     string `json:"id"`
			Worker string `json:"worker"`
		} `json:"active"`
		Workers []struct {
			Worker   string         `json:"worker"`
			Active   int            `json:"active"`
			Outcomes map[string]int `json:"outcomes"`
		} `json:"workers"`
		Activity []struct {
			LeaseID string `json:"lease_id"`
		} `json:"activity"`
		NextCursor *string `json:"next_cursor"`
	}
	t.Run("Default", func(t *testing.T) {
		var first page
		e.do("GET", "/v1/projects/fleet/workers", human.Token, nil).ok(t, 200, &first)
		if len(first.Workers) != 50 || first.NextCursor == nil {
			t.Fatalf("first page: %d workers, next %v; want 50 and a cursor", len(first.Workers), first.NextCursor)
		}
	})
	t.Run("EachOnce", func(t *testing.T) {
		var seen []string
		pages := 0
		for cursor := ""; ; pages++ {
			q := "?limit=10"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			var pg page
			e.do("GET", "/v1/projects/fleet/workers"+q, human.Token, nil).ok(t, 200, &pg)
			mine := map[string]bool{}
			for _, w := range pg.Workers {
				seen = append(seen, w.Worker)
				mine[w.Worker] = true
				if w.Active != want[w.Worker] || w.Outcomes["completed"] != 1-want[w.Worker] {
					t.Errorf("%s: active %d, outcomes %v; want %d live", w.Worker, w.Active, w.Outcomes, want[w.Worker])
				}
			}
			live := 0
			for _, l := range pg.Active {
				if !mine[l.Worker] {
					t.Errorf("a live lease of %s, not a worker of the page %v", l.Worker, mine)
				}
				live++
			}
			counted := 0
			for _, w := range pg.Workers {
				counted += w.Active
			}
			if live != counted || len(pg.Activity) != live {
				t.Errorf("page %d: %d live leases, %d counted, %d activities", pages, live, counted, len(pg.Activity))
			}
			if pg.NextCursor == nil {
				break
			}
			cursor = *pg.NextCursor
		}
		if pages != 5 || len(seen) != n || !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != n {
			t.Fatalf("%d pages saw %d workers (want 6 pages, %d workers, each once, in name order): %v", pages+1, len(seen), n, seen)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		field(t, e.do("GET", "/v1/projects/fleet/workers?limit=501", human.Token, nil).problem(t, 400, "invalid_argument"), "limit")
		field(t, e.do("GET", "/v1/projects/fleet/workers?cursor=bogus", human.Token, nil).problem(t, 400, "invalid_argument"), "cursor")
		field(t, e.do("GET", "/v1/projects/fleet/workers?sort=name", human.Token, nil).problem(t, 400, "invalid_argument"), "sort")
	})
}
