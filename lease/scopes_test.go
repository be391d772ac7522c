package lease_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// overlappingLive counts the pairs of live leases (by the database clock)
// whose stored scopes overlap, judged in Go by graph.ScopesOverlap.
func overlappingLive(t *testing.T, f fixture) (int, string) {
	t.Helper()
	rows, err := f.conn.Query(f.ctx, `SELECT id::text, scopes FROM leases
		WHERE project_id = $1 AND ended_at IS NULL AND expires_at > $2 AND scopes <> '{}'`, f.project, *f.clock.Now())
	if err != nil {
		t.Errorf("live leases: %v", err)
		return 0, ""
	}
	defer rows.Close()
	type held struct {
		id     string
		scopes []string
	}
	var live []held
	for rows.Next() {
		var h held
		if err := rows.Scan(&h.id, &h.scopes); err != nil {
			t.Errorf("scan: %v", err)
			return 0, ""
		}
		live = append(live, h)
	}
	n, first := 0, ""
	for i := range live {
		for j := i + 1; j < len(live); j++ {
			if graph.ScopesOverlap(live[i].scopes, live[j].scopes) {
				if n == 0 {
					first = fmt.Sprintf("%s %v and %s %v", live[i].id, live[i].scopes, live[j].id, live[j].scopes)
				}
				n++
			}
		}
	}
	return n, first
}

// TestScopeRace: 50 claimers commit claims concurrently over items whose
// scopes overlap in many ways; a watcher checks, over and over from the
// stored leases, that no two live leases hold overlapping scopes, and so
// does each claimer right after its claim. Every item is eventually done.
// (A database of its own: concurrent, committing claims.)
func TestScopeRace(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxFailures: 1000, MaxExpiries: 1000})
	scopes := [][]string{
		{"repo"}, {"repo:web/**"}, {"repo:web/src/**"}, {"repo:web/src/*.go"}, {"repo:web/docs/**"},
		{"repo:**/*.md"}, {"repo:api/**"}, {"repo:api/*.go", "db:schema"}, {"db"}, {"db:schema"},
		{"db:data"}, {"cache"}, {"repo:web/src/main.go"}, {"repo:*/src/**"}, {"db:data", "cache:x"},
	}
	const items = 100
	for i := 0; i < items; i++ {
		f.item(t, graph.NewItem{Title: fmt.Sprintf("item %d", i), Touches: scopes[i%len(scopes)]})
	}

	var stop atomic.Bool
	var watcher sync.WaitGroup
	watcher.Add(1)
	checks := 0
	go func() {
		defer watcher.Done()
		for !stop.Load() {
			if n, first := overlappingLive(t, f); n > 0 {
				t.Errorf("%d pairs of live leases hold overlapping scopes, e.g. %s", n, first)
				return
			}
			checks++
		}
	}()

	var done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 50; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 19))
			worker := fmt.Sprintf("w%d", w)
			for idle := 0; done.Load() < items && idle < 400; {
				c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker})
				if errors.Is(err, lease.ErrNothingReady) {
					idle++
					time.Sleep(time.Millisecond) // let a holder finish; not a wait for an effect
					continue
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				idle = 0
				if n, first := overlappingLive(t, f); n > 0 {
					t.Errorf("after a claim, live leases overlap: %s", first)
					return
				}
				if rng.IntN(5) == 0 {
					if _, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), "again"); err != nil {
						t.Errorf("release: %v", err)
						return
					}
					continue
				}
				if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{}`), nil); err != nil {
					t.Errorf("complete: %v", err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	watcher.Wait()
	var open int
	if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND status = 'open'`, f.project).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 || done.Load() != items {
		t.Fatalf("%d items still open, %d completed, want 0 and %d", open, done.Load(), items)
	}
	t.Logf("%d checks by the watcher", checks)
}

// TestScopeFreedOnEnd: a held scope keeps an overlapping item from being
// claimed, and its blocked_by names the lease; the scope is free the
// moment the lease ends, by release or by expiry (on the stub clock).
func TestScopeFreedOnEnd(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{MaxExpiries: 1000})
	a := f.item(t, graph.NewItem{Title: "a", Priority: 2, Touches: []string{"repo:web/**"}})
	b := f.item(t, graph.NewItem{Title: "b", Priority: 1, Touches: []string{"repo:web/src/x.go"}})
	ca := f.claim(t, "w1")
	if ca.Item.ID != a.ID || !slices.Equal(ca.Lease.Scopes, []string{"repo:web/**"}) {
		t.Fatalf("claimed %s with scopes %v, want a with repo:web/**", ca.Item.Title, ca.Lease.Scopes)
	}
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w2"}); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("second claim: %v, want ErrNothingReady (b's scope is held)", err)
	}
	got, err := f.graph.Item(f.ctx, f.project, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.BlockedBy.Scopes) != 1 || got.BlockedBy.Scopes[0].LeaseID != ca.Lease.ID || got.BlockedBy.Scopes[0].Worker != "w1" {
		t.Fatalf("b blocked_by scopes = %+v, want the lease of w1 %s", got.BlockedBy.Scopes, ca.Lease.ID)
	}

	t.Run("Release", func(t *testing.T) {
		if _, err := f.leases.Release(f.ctx, f.project, fence(ca.Lease), ""); err != nil {
			t.Fatal(err)
		}
		// a (priority 2) is ready again and comes first; its scope then
		// holds b off again.
		c := f.claim(t, "w2")
		if c.Item.ID != a.ID {
			t.Fatalf("claimed %s, want a", c.Item.Title)
		}
		ca = c
	})
	t.Run("Expiry", func(t *testing.T) {
		f.clock.Advance(ttl + time.Second)
		c := f.claim(t, "w3")
		if c.Item.ID != a.ID && c.Item.ID != b.ID {
			t.Fatalf("claimed %s", c.Item.Title)
		}
		c2, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w4"})
		if !errors.Is(err, lease.ErrNothingReady) {
			t.Fatalf("claim beside %s: %v (%s), want ErrNothingReady", c.Item.Title, err, c2.Item.Title)
		}
	})
}

// TestCapabilityProperty: random items with random requires, random claims
// with random capabilities; a granted item's requires are always among the
// claim's capabilities, and a claim gets nothing only when no ready item's
// requires are covered.
func TestCapabilityProperty(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	rng := rand.New(rand.NewPCG(19, 1))
	caps := []string{"go", "db", "web", "gpu", "write", "review"}
	randomSet := func(max int) []string {
		var out []string
		for _, c := range caps {
			if rng.IntN(len(caps)) < max {
				out = append(out, c)
			}
		}
		return out
	}
	for i := 0; i < 120; i++ {
		f.item(t, graph.NewItem{Title: fmt.Sprintf("item %d", i), Requires: randomSet(2)})
	}
	granted := 0
	for n := 0; n < 150; n++ {
		offer := randomSet(3)
		c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: fmt.Sprintf("w%d", n), Capabilities: offer})
		var coverable int
		if qerr := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND ready AND requires <@ $2::text[]`,
			f.project, offer).Scan(&coverable); qerr != nil {
			t.Fatal(qerr)
		}
		switch {
		case err == nil:
			granted++
			for _, r := range c.Item.Requires {
				if !slices.Contains(offer, r) {
					t.Fatalf("claim offering %v got %q, which requires %v", offer, c.Item.Title, c.Item.Requires)
				}
			}
		case errors.Is(err, lease.ErrNothingReady), wgerr.CodeOf(err) == wgerr.CodeNoMatch:
			if coverable > 0 {
				t.Fatalf("claim offering %v got nothing (%v); %d ready items it covers", offer, err, coverable)
			}
		default:
			t.Fatal(err)
		}
	}
	if granted == 0 {
		t.Fatal("no claim was granted: the test checks nothing")
	}
}

// TestClaimNoMatch: a claim whose capabilities cover no ready item's
// requires, while ready items exist, answers no_match at once (naming the
// missing capabilities), even as a long poll; with no ready items at all it
// is ErrNothingReady; once an item it covers is ready it is granted.
func TestClaimNoMatch(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	req := lease.ClaimRequest{Worker: "reader", Capabilities: []string{"read"}}
	if _, err := f.leases.Claim(f.ctx, f.project, req); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("empty project: %v, want ErrNothingReady", err)
	}
	f.item(t, graph.NewItem{Title: "migrate", Requires: []string{"go", "db-migrations"}})
	start := time.Now()
	_, err := f.leases.ClaimWait(f.ctx, f.project, req, 30*time.Second, nil)
	var we *wgerr.Error
	if !errors.As(err, &we) || we.Code != wgerr.CodeNoMatch {
		t.Fatalf("claim: %v, want no_match", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("the long poll waited before answering no_match")
	}
	if we.Details["reason"] != "capabilities_unmatched" || !slices.Equal(we.Details["missing"].([]string), []string{"db-migrations", "go"}) {
		t.Fatalf("details = %v", we.Details)
	}
	it := f.item(t, graph.NewItem{Title: "read docs", Requires: []string{"read"}})
	if c := f.claimWith(t, req); c.Item.ID != it.ID {
		t.Fatalf("claimed %s, want read docs", c.Item.Title)
	}
}

func (f fixture) claimWith(t testing.TB, req lease.ClaimRequest) lease.Claim {
	t.Helper()
	c, err := f.leases.Claim(f.ctx, f.project, req)
	if err != nil {
		t.Fatalf("Claim(%+v): %v", req, err)
	}
	return c
}

// TestScopedItemKeepsItsPriority: the one-statement claim does not grant
// write scopes, but a ready item with touches of higher priority than every
// item without is still handed out first (through the transactional path),
// and the priority order holds the other way round too.
func TestScopedItemKeepsItsPriority(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	scoped := f.item(t, graph.NewItem{Title: "scoped", Priority: 5, Touches: []string{"repo:api/**"}})
	plain := f.item(t, graph.NewItem{Title: "plain", Priority: 1})
	first := f.claim(t, "w1")
	if first.Item.ID != scoped.ID || !slices.Equal(first.Lease.Scopes, []string{"repo:api/**"}) {
		t.Fatalf("first claim got %q with scopes %v, want the higher-priority scoped item with repo:api/**",
			first.Item.Title, first.Lease.Scopes)
	}
	if second := f.claim(t, "w2"); second.Item.ID != plain.ID {
		t.Fatalf("second claim got %q, want plain", second.Item.Title)
	}

	high := f.item(t, graph.NewItem{Title: "plain high", Priority: 9})
	f.item(t, graph.NewItem{Title: "scoped low", Priority: 0, Touches: []string{"db:schema"}})
	if c := f.claim(t, "w3"); c.Item.ID != high.ID {
		t.Fatalf("third claim got %q, want plain high", c.Item.Title)
	}
}

// TestScopeEditWhileLeased: editing an item's touches (or requires) while
// it is leased leaves the live lease with the scopes it was granted; the
// edit applies to the item's next claim. So the lease still guards its
// old scope against other claims, and does not hold the new one.
func TestScopeEditWhileLeased(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	a := f.item(t, graph.NewItem{Title: "a", Priority: 3, Touches: []string{"repo:a/**"}, Requires: []string{"go"}})
	ca, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w1", Capabilities: []string{"go"}})
	if err != nil || ca.Item.ID != a.ID {
		t.Fatalf("claim of a: %v", err)
	}
	l := ca.Lease
	if !slices.Equal(l.Scopes, []string{"repo:a/**"}) {
		t.Fatalf("granted scopes %v", l.Scopes)
	}
	newTouches, newRequires := []string{"repo:b/**"}, []string{"rust"}
	edited, err := f.graph.UpdateItem(f.ctx, f.project, a.ID, graph.ItemPatch{Touches: &newTouches, Requires: &newRequires})
	if err != nil {
		t.Fatalf("edit of a leased item's touches: %v", err)
	}
	if !slices.Equal(edited.Touches, newTouches) || edited.State != graph.StateLeased {
		t.Fatalf("edited item %v %s", edited.Touches, edited.State)
	}
	if got := f.getLease(t, l.ID); !slices.Equal(got.Scopes, []string{"repo:a/**"}) || got.EndedAt != nil {
		t.Fatalf("the live lease after the edit: scopes %v, ended %v; want its granted scopes, live", got.Scopes, got.EndedAt)
	}
	// The old scope is still held: an item touching it waits, and names
	// the lease.
	b := f.item(t, graph.NewItem{Title: "b", Priority: 2, Touches: []string{"repo:a/x.go"}})
	c := f.item(t, graph.NewItem{Title: "c", Priority: 1, Touches: []string{"repo:b/y.go"}})
	if got := f.getItem(t, b.ID); len(got.BlockedBy.Scopes) != 1 || got.BlockedBy.Scopes[0].LeaseID != l.ID {
		t.Fatalf("b blocked_by scopes %+v, want a's lease %s", got.BlockedBy.Scopes, l.ID)
	}
	// The new one is not: c (inside it) is handed out before b.
	if got := f.claimOf(t, "w2", c.ID); !slices.Equal(got.Scopes, []string{"repo:b/y.go"}) {
		t.Fatalf("c's lease scopes %v", got.Scopes)
	}
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w3"}); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim while a holds repo:a/** and c holds repo:b/y.go: %v, want nothing ready", err)
	}
	// a's lease ends: its old scope is free, b is handed out; a itself
	// comes back with its new touches and requires, so it now waits for c
	// (repo:b/y.go) and for a worker offering rust.
	if _, err := f.leases.Release(f.ctx, f.project, fence(l), "edited"); err != nil {
		t.Fatal(err)
	}
	f.claimOf(t, "w3", b.ID)
	if got := f.getItem(t, a.ID); got.State != graph.StateReady || len(got.BlockedBy.Scopes) != 1 {
		t.Fatalf("a after its lease: %s, blocked_by scopes %+v; want ready, waiting for c's scope", got.State, got.BlockedBy.Scopes)
	}
	if _, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w4", Capabilities: []string{"go", "rust"}}); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim of a while c holds its new scope: %v, want nothing ready", err)
	}
}

// TestScopeEditRace: claimers claim, complete and release items while
// editors keep rewriting the touches of open items (leased or not); a
// watcher checks from the stored leases that no two live leases ever hold
// overlapping scopes, and every claim's lease holds exactly its item's
// touches as the claim saw them. (A database of its own: concurrent,
// committing claims and edits.)
func TestScopeEditRace(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxFailures: 1000, MaxExpiries: 1000})
	scopes := [][]string{
		{}, {"repo"}, {"repo:web/**"}, {"repo:web/src/*.go"}, {"repo:api/**"}, {"db:schema"}, {"db"},
		{"repo:**/*.md", "db:data"}, {"cache"}, {"repo:web/src/main.go"},
	}
	const items = 60
	ids := make([]graph.Item, items)
	for i := range ids {
		ids[i] = f.item(t, graph.NewItem{Title: fmt.Sprintf("item %d", i), Touches: scopes[i%len(scopes)]})
	}
	var stop atomic.Bool
	var bg sync.WaitGroup
	checks, edits := 0, atomic.Int64{}
	bg.Add(1)
	go func() {
		defer bg.Done()
		for !stop.Load() {
			if n, first := overlappingLive(t, f); n > 0 {
				t.Errorf("%d pairs of live leases hold overlapping scopes, e.g. %s", n, first)
				return
			}
			checks++
		}
	}()
	for e := 0; e < 4; e++ {
		bg.Add(1)
		go func() {
			defer bg.Done()
			rng := rand.New(rand.NewPCG(uint64(e), 7))
			for !stop.Load() {
				it := ids[rng.IntN(items)]
				touches := scopes[rng.IntN(len(scopes))]
				_, err := f.graph.UpdateItem(f.ctx, f.project, it.ID, graph.ItemPatch{Touches: &touches})
				switch {
				case err == nil:
					edits.Add(1)
				case errors.Is(err, wgerr.Conflict): // finished meanwhile
				default:
					t.Errorf("edit: %v", err)
					return
				}
			}
		}()
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 23))
			worker := fmt.Sprintf("w%d", w)
			for idle := 0; done.Load() < items && idle < 400; {
				c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: worker})
				if errors.Is(err, lease.ErrNothingReady) {
					idle++
					time.Sleep(time.Millisecond) // let a holder finish; not a wait for an effect
					continue
				}
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				idle = 0
				if !slices.Equal(c.Lease.Scopes, c.Item.Touches) && len(c.Lease.Scopes)+len(c.Item.Touches) > 0 {
					t.Errorf("lease %s holds %v, its item's touches at the claim were %v", c.Lease.ID, c.Lease.Scopes, c.Item.Touches)
					return
				}
				if rng.IntN(4) == 0 {
					if _, err := f.leases.Release(f.ctx, f.project, fence(c.Lease), "again"); err != nil {
						t.Errorf("release: %v", err)
						return
					}
					continue
				}
				if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), json.RawMessage(`{}`), nil); err != nil {
					t.Errorf("complete: %v", err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	bg.Wait()
	var open int
	if err := f.conn.QueryRow(f.ctx, `SELECT count(*) FROM items WHERE project_id = $1 AND status = 'open'`, f.project).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 || done.Load() != items {
		t.Fatalf("%d items still open, %d completed, want 0 and %d", open, done.Load(), items)
	}
	if edits.Load() == 0 {
		t.Fatal("no edit ran: the race tested nothing")
	}
	t.Logf("%d checks by the watcher, %d edits", checks, edits.Load())
}

// TestUnofferedCapabilities: a capability counts as offered while a
// worker offered it in a claim within lease.OfferWindow, and while a
// worker whose last offer included it holds a live lease of the project
// (busy on a task longer than the window, it claims again when done);
// once that lease is past its expiry, only the window counts.
func TestUnofferedCapabilities(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	long := f.item(t, graph.NewItem{Title: "train the model", Requires: []string{"gpu"}, Priority: 10})
	f.item(t, graph.NewItem{Title: "train another", Requires: []string{"gpu"}})
	docs := f.item(t, graph.NewItem{Title: "write the guide", Requires: []string{"docs"}})
	c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "trainer", TTL: time.Hour, Capabilities: []string{"gpu", "go"}})
	if err != nil || c.Item.ID != long.ID {
		t.Fatalf("claim = %v, %v", c.Item.Title, err)
	}
	w, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "writer", Capabilities: []string{"docs"}})
	if err != nil || w.Item.ID != docs.ID {
		t.Fatalf("claim = %v, %v", w.Item.Title, err)
	}
	if _, err := f.leases.Complete(f.ctx, f.project, lease.Fence{LeaseID: w.Lease.ID, Epoch: w.Lease.Epoch}, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := func(at string, caps ...string) {
		t.Helper()
		got, err := f.leases.UnofferedCapabilities(f.ctx, f.project, []string{"docs", "gpu", "rust"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, caps) {
			t.Fatalf("%s: unoffered = %v, want %v", at, got, caps)
		}
	}
	want("at once", "rust")
	f.clock.Advance(lease.OfferWindow + 5*time.Minute)
	want("past the window, the trainer still on its lease", "docs", "rust")
	f.clock.Advance(time.Hour)
	want("past the trainer's expiry", "docs", "gpu", "rust")
}

// TestClaimBatchScopes: a batch claim grants items with touches too, by
// the single claim's rules: never two live leases (of the batch, or one
// of the batch and another) with overlapping scopes, and an item whose
// scope is free again is granted by the next batch. Capabilities apply
// as to any claim. A batch used to grant no item with touches at all, so
// that `workgraph work --concurrency N` never took one. (A database of its
// own: a batch takes several items with touches only on a pool, each in a
// transaction of its own; see fillScoped.)
func TestClaimBatchScopes(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	whole := f.item(t, graph.NewItem{Title: "whole dir", Priority: 5, Touches: []string{"repo:x/**"}})
	inside := f.item(t, graph.NewItem{Title: "one file", Priority: 4, Touches: []string{"repo:x/y.go"}})
	schema := f.item(t, graph.NewItem{Title: "schema", Priority: 3, Touches: []string{"db:schema"}, Requires: []string{"sql"}})
	f.item(t, graph.NewItem{Title: "plain", Priority: 1})
	titles := func(cs []lease.Claim) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Item.Title)
		}
		slices.Sort(out)
		return out
	}

	cs, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w", Capabilities: []string{"sql"}}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := titles(cs); !slices.Equal(got, []string{"plain", "schema", "whole dir"}) {
		t.Fatalf("first batch granted %q, want plain, schema and whole dir (one file overlaps whole dir)", got)
	}
	for _, c := range cs {
		if !slices.Equal(c.Lease.Scopes, c.Item.Touches) {
			t.Errorf("%s: lease holds %v, its item touches %v", c.Item.Title, c.Lease.Scopes, c.Item.Touches)
		}
		if c.Item.ID == schema.ID && !slices.Equal(c.Lease.Scopes, []string{"db:schema"}) {
			t.Errorf("schema's lease holds %v", c.Lease.Scopes)
		}
	}
	if _, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w2"}, 10); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("second batch: %v, want nothing (one file's scope is held)", err)
	}
	for _, c := range cs {
		if c.Item.ID == whole.ID {
			if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	again, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w2"}, 10)
	if err != nil || len(again) != 1 || again[0].Item.ID != inside.ID {
		t.Fatalf("batch after whole dir completed: %v, %q; want one file", err, titles(again))
	}
	f.checkInvariants(t)
}

// TestBatchScopeRace: batch claimers commit concurrently over items whose
// scopes overlap in many ways; after every batch no two live leases hold
// overlapping scopes, and every item is eventually done. (A database of
// its own: concurrent, committing claims.)
func TestBatchScopeRace(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	scopes := [][]string{
		{"repo"}, {"repo:web/**"}, {"repo:web/src/*.go"}, {"repo:**/*.md"}, {"repo:api/**"},
		{"db"}, {"db:schema"}, {"db:data", "cache:x"}, {}, {"cache"},
	}
	const items = 40
	for i := 0; i < items; i++ {
		f.item(t, graph.NewItem{Title: fmt.Sprintf("item %d", i), Touches: scopes[i%len(scopes)]})
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w%d", w)
			for idle := 0; done.Load() < items && idle < 400; {
				cs, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: worker}, 5)
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
}

// TestClaimBatchNoMatch: a batch claim answers no_match as a single claim
// does (ready items exist, and its capabilities cover none of them), at
// once, also as a long poll, instead of waiting in silence; and it records
// the capabilities it offered, as a single claim does, so that the item
// page does not say no live worker has them.
func TestClaimBatchNoMatch(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	req := lease.ClaimRequest{Worker: "reader", Capabilities: []string{"read"}}
	if _, err := f.leases.ClaimBatch(f.ctx, f.project, req, 5); !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("empty project: %v, want ErrNothingReady", err)
	}
	if got, err := f.leases.UnofferedCapabilities(f.ctx, f.project, []string{"read"}); err != nil || len(got) != 0 {
		t.Fatalf("unoffered after a batch offering read: %v, %v; want none", got, err)
	}
	f.item(t, graph.NewItem{Title: "migrate", Requires: []string{"go", "db-migrations"}})
	start := time.Now()
	_, err := f.leases.ClaimBatchWait(f.ctx, f.project, req, 5, 30*time.Second, nil)
	var we *wgerr.Error
	if !errors.As(err, &we) || we.Code != wgerr.CodeNoMatch {
		t.Fatalf("batch claim: %v, want no_match", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("the long poll waited before answering no_match")
	}
	if we.Details["reason"] != "capabilities_unmatched" || !slices.Equal(we.Details["missing"].([]string), []string{"db-migrations", "go"}) {
		t.Fatalf("details = %v", we.Details)
	}
	it := f.item(t, graph.NewItem{Title: "read docs", Requires: []string{"read"}})
	cs, err := f.leases.ClaimBatch(f.ctx, f.project, req, 5)
	if err != nil || len(cs) != 1 || cs[0].Item.ID != it.ID {
		t.Fatalf("batch claim: %v, %d claims; want read docs", err, len(cs))
	}
}

// TestScopeHeldThroughHeartbeatAtExpiry: a heartbeat that the fence admits
// just before its lease's expiry, and that commits just after it, keeps the
// lease live without a gap; a claim that runs between the two must not
// grant an overlapping scope. The claim's reap skips the lease (the
// heartbeat holds its row), so a scope check that judged the lease by its
// last committed expiry saw it gone and granted the scope: two live leases
// overlapped once the heartbeat committed. (A database of its own: the
// heartbeat's transaction stays open while the claim runs beside it.)
func TestScopeHeldThroughHeartbeatAtExpiry(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{MaxExpiries: 1000})
	a := f.item(t, graph.NewItem{Title: "a", Priority: 2, Touches: []string{"repo:web/**"}})
	f.item(t, graph.NewItem{Title: "b", Priority: 1, Touches: []string{"repo:web/src/x.go"}})
	ca := f.claim(t, "w1")
	if ca.Item.ID != a.ID {
		t.Fatalf("claimed %s, want a", ca.Item.Title)
	}
	expiry := ca.Lease.ExpiresAt

	// The heartbeat, judged 1 ms before the expiry, not yet committed.
	tx, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(f.ctx)
	hbClock := clock.NewStub(expiry.Add(-time.Millisecond))
	if _, err := lease.NewService(tx, hbClock, f.cfg).Heartbeat(f.ctx, f.project, fence(ca.Lease), lease.Heartbeat{}); err != nil {
		t.Fatalf("heartbeat before the expiry: %v", err)
	}

	// A claim 1 ms after the expiry, while the heartbeat is in flight.
	f.clock.Set(expiry.Add(time.Millisecond))
	c, err := f.leases.Claim(f.ctx, f.project, lease.ClaimRequest{Worker: "w2"})
	if err == nil {
		t.Errorf("claim beside the in-flight heartbeat granted %s with scopes %v, which overlap w1's live lease", c.Item.Title, c.Lease.Scopes)
	} else if !errors.Is(err, lease.ErrNothingReady) {
		t.Fatalf("claim: %v, want ErrNothingReady", err)
	}
	if err := tx.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.getLease(t, ca.Lease.ID); got.EndedAt != nil || !got.ExpiresAt.After(expiry) {
		t.Fatalf("w1's lease after its heartbeat: ended %v, expires %v; want live past %v", got.EndedAt, got.ExpiresAt, expiry)
	}
	if n, first := overlappingLive(t, f); n > 0 {
		t.Errorf("%d pairs of live leases hold overlapping scopes: %s", n, first)
	}
}
