package lease_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestClaim(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})

	t.Run("OK", func(t *testing.T) {
		it := f.item(t, graph.NewItem{Title: "only"})
		c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w1", Principal: "token:a", TTL: 90 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		now := *f.clock.Now()
		l := c.Lease
		if l.ItemID != it.ID || l.Epoch != 1 || l.Worker != "w1" || l.Principal != "token:a" ||
			!l.AcquiredAt.Equal(now) || !l.ExpiresAt.Equal(now.Add(90*time.Second)) || l.EndedAt != nil || l.Outcome != nil {
			t.Fatalf("lease = %+v", l)
		}
		if c.Item.ID != it.ID || c.Item.State != graph.StateLeased || c.Item.Epoch != 1 ||
			c.Item.ActiveLeaseID == nil || *c.Item.ActiveLeaseID != l.ID {
			t.Fatalf("item = %+v", c.Item)
		}
		if c.Attention == nil || len(c.Attention) != 0 {
			t.Fatalf("attention = %#v, want an empty list", c.Attention)
		}
		stored := f.getLease(t, l.ID)
		if stored.ID != l.ID || stored.EndedAt != nil {
			t.Fatalf("stored = %+v", stored)
		}
		if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w2"}); !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("second claim: err = %v, want ErrNothingReady", err)
		}
	})
}

func TestClaimOrder(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	low := f.item(t, graph.NewItem{Title: "low", Priority: 1})
	highFirst := f.item(t, graph.NewItem{Title: "high first", Priority: 5})
	highSecond := f.item(t, graph.NewItem{Title: "high second", Priority: 5})
	blocked := f.item(t, graph.NewItem{Title: "blocked", Priority: 9, DependsOn: []uuid.UUID{low.ID}})
	for _, want := range []uuid.UUID{highFirst.ID, highSecond.ID, low.ID} {
		if got := f.claim(t, "w").Item.ID; got != want {
			t.Fatalf("claimed %v, want %v", got, want)
		}
	}
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("blocked item %v was claimable: %v", blocked.ID, err)
	}
}

func TestClaimLabels(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	f.item(t, graph.NewItem{Title: "go", Priority: 9, Labels: []string{"go"}})
	both := f.item(t, graph.NewItem{Title: "go+db", Labels: []string{"go", "db"}})
	c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Labels: []string{"db", "go"}})
	if err != nil || c.Item.ID != both.ID {
		t.Fatalf("claim with labels = %v, %v; want %v", c.Item.ID, err, both.ID)
	}
	_, err = f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Labels: []string{"rust"}})
	if !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("err = %v, want ErrNothingReady", err)
	}
}

func TestClaimInvalid(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{MinTTL: time.Second, MaxTTL: time.Hour})
	it := f.item(t, graph.NewItem{})
	for name, req := range map[string]lease.ClaimRequest{
		"ErrNoWorker":   {Worker: " "},
		"ErrLongWorker": {Worker: string(make([]byte, 201))},
		// The worker label is shown in history, pages and logs.
		"ErrWorkerNewline": {Worker: "w1\nlevel=ERROR"},
		"ErrWorkerEscape":  {Worker: "w1\x1b]0;owned\a"},
		"ErrTTLTooShort":   {Worker: "w", TTL: time.Millisecond},
		"ErrTTLTooLong":    {Worker: "w", TTL: 2 * time.Hour},
		"ErrTTLNegative":   {Worker: "w", TTL: -time.Second},
		"ErrEmptyLabel":    {Worker: "w", Labels: []string{""}},
		// One label rule for items and claims (graph.CleanLabels): a label
		// no item can carry is refused, not silently matched by nothing.
		"ErrLabelSpace":    {Worker: "w", Labels: []string{"has space"}},
		"ErrLabelTooLong":  {Worker: "w", Labels: []string{strings.Repeat("x", graph.MaxLabelChars+1)}},
		"ErrTooManyLabels": {Worker: "w", Labels: manyLabels(graph.MaxLabels + 1)},
		"ErrLabelNotASCII": {Worker: "w", Labels: []string{"étiquette"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.leases.Claim(f.ctx, f.project, req)
			if !errors.Is(err, wgerr.Invalid) {
				t.Fatalf("err = %v, want invalid_argument", err)
			}
		})
	}
	if got := f.getItem(t, it.ID); got.State != graph.StateReady || got.Epoch != 0 {
		t.Fatalf("item after refused claims = %+v", got)
	}
}

func manyLabels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("l%d", i)
	}
	return out
}

func TestClaimTokenLimit(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxActivePerToken: 2}) // concurrent claims
	f.items(t, 5)
	token := uuid.New()
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted, limited := 0, 0
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", TokenID: &token})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				granted++
			case errors.Is(err, wgerr.RateLimited):
				limited++
			default:
				t.Errorf("claim: %v", err)
			}
		}()
	}
	wg.Wait()
	if granted != 2 || limited != 4 {
		t.Fatalf("granted %d, limited %d; want 2 and 4", granted, limited)
	}
	// Another token is not affected.
	other := uuid.New()
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", TokenID: &other}); err != nil {
		t.Fatalf("other token: %v", err)
	}
}

// TestClaimConcurrent: 100 claimers on 30 items get 30 distinct leases and
// 70 ErrNothingReady.
func TestClaimConcurrent(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{}) // concurrent claims
	f.items(t, 30)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	items := map[uuid.UUID]bool{}
	leases := map[uuid.UUID]bool{}
	nothing := 0
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w" + string(rune('a'+i%26))})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, lease.ErrNothingReady):
				nothing++
			case err != nil:
				t.Errorf("claim: %v", err)
			default:
				if items[c.Item.ID] {
					t.Errorf("item %v claimed twice", c.Item.ID)
				}
				items[c.Item.ID], leases[c.Lease.ID] = true, true
			}
		}(i)
	}
	close(start)
	wg.Wait()
	if len(items) != 30 || len(leases) != 30 || nothing != 70 {
		t.Fatalf("%d items, %d leases, %d nothing-ready; want 30, 30, 70", len(items), len(leases), nothing)
	}
	var active int
	if err := f.conn.QueryRow(f.ctx, "SELECT count(*) FROM leases WHERE ended_at IS NULL").Scan(&active); err != nil || active != 30 {
		t.Fatalf("active leases in the database = %d, %v", active, err)
	}
	f.checkInvariants(t)
}

// TestClaimTTLCeiling: no configuration allows a lease longer than
// lease.TTLCeiling (the bound the API also refuses lease_seconds beyond).
func TestClaimTTLCeiling(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{MaxTTL: 30 * 24 * time.Hour})
	f.item(t, graph.NewItem{})
	_, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", TTL: lease.TTLCeiling + time.Second})
	if !errors.Is(err, wgerr.Invalid) {
		t.Fatalf("claim beyond the ceiling: err = %v, want invalid_argument", err)
	}
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w", TTL: lease.TTLCeiling}); err != nil {
		t.Fatalf("claim at the ceiling: %v", err)
	}
}

// TestClaimConcurrentPastItemsItCannotTake: 40 gpu workers claim at once
// in a project whose first 200 ready items require tpu, so that each claim
// takes the merge of the items it can take (migration 00113) rather than
// the walk; the 20 items they can take are granted once each, in claim
// order per worker, and the rest answer nothing ready or no_match.
func TestClaimConcurrentPastItemsItCannotTake(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{}) // concurrent claims
	if _, err := f.pool.Exec(f.ctx, `
		INSERT INTO items (project_id, title, created_by, priority, requires)
		SELECT $1::uuid, 'tpu ' || g, 'test', 5, '{tpu}'::text[] FROM generate_series(1, 200) AS g
		UNION ALL
		SELECT $1::uuid, 'gpu ' || g, 'test', 1, '{gpu}' FROM generate_series(1, 10) AS g
		UNION ALL
		SELECT $1::uuid, 'plain ' || g, 'test', 0, '{}' FROM generate_series(1, 10) AS g`, f.project); err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := map[uuid.UUID]string{}
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "gpu", Capabilities: []string{"gpu"}})
			var we *wgerr.Error
			switch {
			case err == nil:
				mu.Lock()
				defer mu.Unlock()
				if prev, ok := granted[got.Item.ID]; ok {
					t.Errorf("item %q granted twice (%s)", got.Item.Title, prev)
				}
				granted[got.Item.ID] = got.Item.Title
				if strings.HasPrefix(got.Item.Title, "tpu") {
					t.Errorf("a gpu worker was granted %q", got.Item.Title)
				}
			case errors.Is(err, lease.ErrNothingReady), errors.As(err, &we) && we.Code == wgerr.CodeNoMatch:
			default:
				t.Errorf("claim: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(granted) != 20 {
		t.Errorf("granted %d items, want the 20 the gpu workers can take: %v", len(granted), granted)
	}
}
