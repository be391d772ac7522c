package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// keyed is ctx as the API hands it to a request with an Idempotency-Key:
// with a before-commit hook (the key's record), so that the claim's
// writes run in one transaction that the hook fences. hooks counts the
// transactions that reached it.
func keyed(ctx context.Context, hooks *atomic.Int64) context.Context {
	return db.WithBeforeCommit(ctx, func(context.Context, pgx.Tx) error {
		hooks.Add(1)
		return nil
	})
}

// titlesOf is the claims' item titles in grant order.
func titlesOf(cs []lease.Claim) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Item.Title
	}
	return out
}

// TestKeyedBatchClaimGrantsScopedItems: a batch claim sent with an
// Idempotency-Key (as the Go client, the CLI and `workgraph work
// --concurrency` send every claim) grants what the same batch without a
// key grants: what a sequence of single claims would, in their order,
// items with touches included. It granted one item with touches at most
// (a batch of 10 over items that all declare touches got one lease),
// through the one-statement path and through the transactional one (a
// lease of the project past its expiry sends the batch there). (A
// database of its own: the claims commit.)
func TestKeyedBatchClaimGrantsScopedItems(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	want := []string{"web", "api", "plain", "schema"}
	for _, path := range []string{"one statement", "transaction"} {
		t.Run(path, func(t *testing.T) {
			label, r := []string{fmt.Sprintf("l%d", len(path))}, fmt.Sprintf("r%d", len(path))
			f.item(t, graph.NewItem{Title: "web", Priority: 9, Labels: label, Touches: []string{r + ":web/**"}})
			f.item(t, graph.NewItem{Title: "web/a", Priority: 8, Labels: label, Touches: []string{r + ":web/a/**"}})
			f.item(t, graph.NewItem{Title: "api", Priority: 7, Labels: label, Touches: []string{r + ":api/**"}})
			f.item(t, graph.NewItem{Title: "api/x", Priority: 6, Labels: label, Touches: []string{r + ":api/x.go"}})
			f.item(t, graph.NewItem{Title: "whole repo", Priority: 5, Labels: label, Touches: []string{r}})
			f.item(t, graph.NewItem{Title: "plain", Priority: 4, Labels: label})
			f.item(t, graph.NewItem{Title: "schema", Priority: 3, Labels: label, Touches: []string{"db" + r + ":schema"}})
			if path == "transaction" {
				// A lease past its expiry, not yet ended: the guard that
				// sends a claim to the transactional path.
				f.item(t, graph.NewItem{Title: "short", Labels: []string{"short"}})
				short, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "s", Labels: []string{"short"}, TTL: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				f.clock.Set(short.Lease.ExpiresAt.Add(time.Second))
			}
			var hooks atomic.Int64
			cs, err := f.leases.ClaimBatch(keyed(f.ctx, &hooks), f.project, lease.ClaimRequest{Worker: "w", Labels: label}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if got := titlesOf(cs); !slices.Equal(got, want) {
				t.Errorf("keyed batch of 10 granted %q, want %q (as single claims would, in their order)", got, want)
			}
			if hooks.Load() == 0 {
				t.Error("no transaction ran the key's hook")
			}
			if n, first := overlappingLive(t, f); n > 0 {
				t.Errorf("live leases overlap: %s", first)
			}
			for _, c := range cs {
				if !slices.Equal(c.Lease.Scopes, c.Item.Touches) {
					t.Errorf("%s: lease holds %v, its item touches %v", c.Item.Title, c.Lease.Scopes, c.Item.Touches)
				}
			}
		})
	}
	f.checkInvariants(t)
}

// TestKeyedBatchScopeRace: keyed and unkeyed batch claimers commit
// concurrently over items whose scopes overlap in many ways; after every
// batch no two live leases hold overlapping scopes, and every item is
// eventually done. A keyed batch holds the scope locks of each item it
// took until its one transaction ends, so it takes the locks of its
// second and later items only if they are free (never waits while it
// holds some): no deadlock among claimers. (A database of its own:
// concurrent, committing claims.)
func TestKeyedBatchScopeRace(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	scopes := [][]string{
		{"repo"}, {"repo:web/**"}, {"repo:web/src/*.go"}, {"repo:**/*.md"}, {"repo:api/**"},
		{"db"}, {"db:schema"}, {"db:data", "cache:x"}, {}, {"cache"}, {"repo:docs/**"}, {"cache:y"},
	}
	const items = 60
	for i := 0; i < items; i++ {
		f.item(t, graph.NewItem{Title: fmt.Sprintf("item %d", i), Touches: scopes[i%len(scopes)]})
	}
	var done, hooks atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker, ctx := fmt.Sprintf("w%d", w), f.ctx
			if w%2 == 0 {
				ctx = keyed(ctx, &hooks)
			}
			for idle := 0; done.Load() < items && idle < 400; {
				cs, err := f.leases.ClaimBatch(ctx, f.project, lease.ClaimRequest{Worker: worker}, 5)
				if errors.Is(err, lease.ErrNothingReady) {
					idle++
					time.Sleep(time.Millisecond) // let a holder finish; not a wait for an effect
					continue
				}
				if err != nil {
					t.Errorf("batch claim: %v", err)
					return
				}
				idle = 0
				if n, first := overlappingLive(t, f); n > 0 {
					t.Errorf("after a batch, live leases overlap: %s", first)
					return
				}
				for _, c := range cs {
					if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{}`), nil); err != nil {
						t.Errorf("complete: %v", err)
						return
					}
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if done.Load() != items {
		t.Fatalf("%d items completed, want %d", done.Load(), items)
	}
	if hooks.Load() == 0 {
		t.Fatal("no keyed batch committed")
	}
}
