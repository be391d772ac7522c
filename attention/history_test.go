package attention_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/page"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestItemHistoryPages walks an item's requests both ways: ForItem from
// its first, oldest first; Latest from its newest, a page of the newest
// at a time, oldest first within the page. Another item's requests,
// asked in between, are never among them.
func TestItemHistoryPages(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a, b := f.item(t, "a"), f.item(t, "b")
	var ids []uuid.UUID
	for i := range 7 {
		ids = append(ids, f.mustOpen(t, a, ask(fmt.Sprintf("a%d", i), false)).ID)
		f.mustOpen(t, b, ask(fmt.Sprintf("b%d", i), false))
	}
	idsOf := func(rs []attention.Request) []uuid.UUID {
		out := make([]uuid.UUID, len(rs))
		for i, r := range rs {
			out[i] = r.ID
		}
		return out
	}

	t.Run("ForItem", func(t *testing.T) {
		var got []uuid.UUID
		var sizes []int
		cursor := ""
		for range 10 {
			p, err := f.svc.ForItem(f.ctx, f.project, a, cursor, 3)
			if err != nil {
				t.Fatal(err)
			}
			got, sizes = append(got, idsOf(p.Requests)...), append(sizes, len(p.Requests))
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(ids) || fmt.Sprint(sizes) != "[3 3 1]" {
			t.Fatalf("pages %v of %v, want %v in pages of 3", sizes, got, ids)
		}
	})
	t.Run("Latest", func(t *testing.T) {
		var pages [][]uuid.UUID
		cursor := ""
		for range 10 {
			h, err := f.svc.Latest(f.ctx, f.project, a, cursor, 3)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, idsOf(h.Requests))
			if cursor = h.Older; cursor == "" {
				break
			}
		}
		want := [][]uuid.UUID{ids[4:7], ids[1:4], ids[0:1]}
		if fmt.Sprint(pages) != fmt.Sprint(want) {
			t.Fatalf("pages = %v, want %v", pages, want)
		}
	})
	t.Run("LatestAll", func(t *testing.T) {
		h, err := f.svc.Latest(f.ctx, f.project, a, "", 7)
		if err != nil || fmt.Sprint(idsOf(h.Requests)) != fmt.Sprint(ids) || h.Older != "" {
			t.Fatalf("Latest(7) = %v older %q, %v; want all 7, no older", idsOf(h.Requests), h.Older, err)
		}
	})
	t.Run("None", func(t *testing.T) {
		h, err := f.svc.Latest(f.ctx, f.project, f.item(t, "c"), "", 0)
		if err != nil || len(h.Requests) != 0 || h.Older != "" {
			t.Fatalf("Latest of an item without requests = %+v, %v", h, err)
		}
	})
	t.Run("ErrBadInput", func(t *testing.T) {
		h, err := f.svc.Latest(f.ctx, f.project, a, "", 3)
		if err != nil {
			t.Fatal(err)
		}
		for name, call := range map[string]func() error{
			"LatestLimit":  func() error { _, err := f.svc.Latest(f.ctx, f.project, a, "", page.Max+1); return err },
			"ForItemLimit": func() error { _, err := f.svc.ForItem(f.ctx, f.project, a, "", -1); return err },
			"LatestCursor": func() error { _, err := f.svc.Latest(f.ctx, f.project, a, "nope", 0); return err },
			// a cursor of one direction is refused by the other
			"ForItemOlder": func() error { _, err := f.svc.ForItem(f.ctx, f.project, a, h.Older, 0); return err },
		} {
			if err := call(); !errors.Is(err, wgerr.Invalid) {
				t.Errorf("%s: err = %v, want invalid_argument", name, err)
			}
		}
	})
}

// TestLatestByteBudget: Latest keeps, beyond the newest request, only
// the newer ones that fit in page.MaxBytes, and says that older ones
// exist.
func TestLatestByteBudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := f.item(t, "a")
	blob := make([]byte, page.MaxBytes/3)
	for i := range blob {
		blob[i] = 'x'
	}
	big := fmt.Sprintf(`{"blob": %q}`, blob)
	var ids []uuid.UUID
	for i := range 4 {
		in := ask(fmt.Sprintf("q%d", i), false)
		in.Context = []byte(big)
		ids = append(ids, f.mustOpen(t, a, in).ID)
	}
	h, err := f.svc.Latest(f.ctx, f.project, a, "", 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Requests) != 2 || h.Requests[0].ID != ids[2] || h.Requests[1].ID != ids[3] || h.Older == "" {
		t.Fatalf("Latest = %d requests, older %q; want the newest 2 (of 4, a third of the budget each) and older ones", len(h.Requests), h.Older)
	}
}
