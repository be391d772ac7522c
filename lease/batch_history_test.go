package lease_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// askWith opens on item n answered requests whose context is a JSON
// string of size bytes of fill (a large document: their history passes
// the byte budget), oldest first.
func (f fixture) askWith(t testing.TB, item uuid.UUID, n, size int, fill string) {
	t.Helper()
	doc, err := json.Marshal(map[string]string{"doc": strings.Repeat(fill, size/len(fill))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r, err := f.att.Open(f.ctx, f.project, item, attention.NewRequest{
			Question: fmt.Sprintf("large %d", i), Source: attention.SourcePerson, RequestedBy: "alice", Context: doc,
		})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		f.resolve(t, r, fmt.Sprintf("answer %d", i))
	}
}

// TestBatchHistoriesAreOneStatement: a batch claim of several items with
// attention histories reads all their histories in one statement, not
// one per item: the batch is its claiming statement and that one. It used
// to send a statement per item with a history (up to MaxBatch). A
// database of its own: the counted pool must see the fixture's committed
// items.
func TestBatchHistoriesAreOneStatement(t *testing.T) {
	t.Parallel()
	f := setupDB(t, lease.Config{})
	leases, c := countingLeases(t, f)
	for i, n := range []int{lease.ClaimHistory + 3, 2, 1, 0, 5} {
		it := f.item(t, graph.NewItem{Title: fmt.Sprintf("item %d", i)})
		f.questions(t, it.ID, n)
	}
	var got []lease.Claim
	n := c.counted(t, func() (err error) {
		got, err = leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, 10)
		return err
	})
	if len(got) != 5 {
		t.Fatalf("the batch claimed %d items, want 5", len(got))
	}
	if n != 2 {
		t.Errorf("a batch of 4 items with histories sent %d statements, want 2 (the claim, the histories)", n)
	}
	for _, cl := range got {
		if cl.Attention == nil {
			t.Errorf("claim of %q carries a nil history, want a list", cl.Item.Title)
		}
	}
}

// TestBatchHistoriesAsSingleClaims: every claim of a batch carries
// exactly the history the single claim of its item carries (the item's
// latest ClaimHistory requests within the byte budget, attention.Latest),
// with the same older_attention: short and long histories, histories of
// large requests cut by the budget (by their size as the answer encodes
// them, escapes included), a request larger than the budget alone, an item
// without requests, and an item with touches (granted by the single
// claim's statement within the batch).
func TestBatchHistoriesAsSingleClaims(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	const mib = 1 << 20
	cases := []struct {
		title string
		ask   func(uuid.UUID)
		n     int  // requests in the claim's history
		older bool // older_attention
	}{
		{"none", func(uuid.UUID) {}, 0, false},
		{"short", func(id uuid.UUID) { f.questions(t, id, 3) }, 3, false},
		{"exactly", func(id uuid.UUID) { f.questions(t, id, lease.ClaimHistory) }, lease.ClaimHistory, false},
		{"long", func(id uuid.UUID) { f.questions(t, id, lease.ClaimHistory+4) }, lease.ClaimHistory, true},
		// 1 MiB each: 3 fit in the budget of 4 MiB with their overhead.
		{"large", func(id uuid.UUID) { f.askWith(t, id, 6, mib, "x") }, 3, true},
		// 1 MiB of '<' each is 6 MiB as the answer escapes it: the newest
		// alone, although the statement's lower bound lets more through.
		{"escaped", func(id uuid.UUID) { f.askWith(t, id, 3, mib, "<") }, 1, true},
		// Larger than the budget alone: the newest still comes back.
		{"huge", func(id uuid.UUID) { f.questions(t, id, 2); f.askWith(t, id, 1, 5*mib, "y") }, 1, true},
		{"huge alone", func(id uuid.UUID) { f.askWith(t, id, 1, 5*mib, "z") }, 1, false},
	}
	ids := map[uuid.UUID]int{}
	for i, tc := range cases {
		it := f.item(t, graph.NewItem{Title: tc.title, Priority: int32(len(cases) - i)})
		tc.ask(it.ID)
		ids[it.ID] = i
	}
	scoped := f.item(t, graph.NewItem{Title: "scoped", Touches: []string{"repo:x/**"}, Priority: -1})
	f.questions(t, scoped.ID, lease.ClaimHistory+1)
	cases = append(cases, struct {
		title string
		ask   func(uuid.UUID)
		n     int
		older bool
	}{"scoped", nil, lease.ClaimHistory, true})
	ids[scoped.ID] = len(cases) - 1

	// What the single claim would carry, read before the batch.
	single := map[uuid.UUID]attention.History{}
	for id := range ids {
		h, err := f.att.Latest(f.ctx, f.project, id, "", lease.ClaimHistory)
		if err != nil {
			t.Fatal(err)
		}
		single[id] = h
	}
	got, err := f.leases.ClaimBatch(f.ctx, f.project, lease.ClaimRequest{Worker: "w"}, lease.MaxBatch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cases) {
		t.Fatalf("the batch claimed %d items, want %d", len(got), len(cases))
	}
	for _, cl := range got {
		tc, h := cases[ids[cl.Item.ID]], single[cl.Item.ID]
		if fmt.Sprint(requestIDs(cl.Attention)) != fmt.Sprint(requestIDs(h.Requests)) || cl.OlderAttention != (h.Older != "") {
			t.Errorf("%s: batch history of %d requests (older %v), the single claim's %d (older %v)",
				tc.title, len(cl.Attention), cl.OlderAttention, len(h.Requests), h.Older != "")
		}
		if len(cl.Attention) != tc.n || cl.OlderAttention != tc.older {
			t.Errorf("%s: %d requests (older %v), want %d (older %v)", tc.title, len(cl.Attention), cl.OlderAttention, tc.n, tc.older)
		}
		for i, r := range cl.Attention {
			if i > 0 && r.Seq <= cl.Attention[i-1].Seq {
				t.Errorf("%s: history not oldest first", tc.title)
			}
			if r.ItemID != cl.Item.ID || r.ItemTitle != cl.Item.Title || r.Answer == nil {
				t.Errorf("%s: request %d is of item %s (%q), answer %v", tc.title, i, r.ItemID, r.ItemTitle, r.Answer)
			}
			if want := h.Requests[i]; r.Size() != want.Size() || r.State != want.State {
				t.Errorf("%s: request %d differs from the single claim's", tc.title, i)
			}
		}
	}
}
