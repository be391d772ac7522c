package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/page"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// observationsOf is every refused report kept for a lease, walking its
// pages.
func observationsOf(ctx context.Context, s *lease.Service, project, id uuid.UUID) ([]lease.Observation, error) {
	var all []lease.Observation
	cursor := ""
	for {
		p, err := s.Observations(ctx, project, id, cursor, 0)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Observations...)
		if p.Next == "" {
			return all, nil
		}
		cursor = p.Next
	}
}

// TestObservationsPaged: a lease's refused reports come a page at a time,
// within a page's rows (limit) and bytes (page.MaxBytes of their
// payloads), and walking the cursors gives every one exactly once, in the
// order received, the kept ones and the later ones lease_refusals holds.
// Observations used to read every report of a lease at once: 25 refused
// completions of 400 KB results were one answer of 10 MB.
func TestObservationsPaged(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	_, gone := f.claimNew(t, "x")
	if _, err := f.leases.Release(f.ctx, f.project, fence(gone), ""); err != nil {
		t.Fatal(err)
	}
	const calls, big = 30, 400_000
	for i := range calls {
		f.clock.Advance(time.Second)
		result := json.RawMessage(fmt.Sprintf(`{"call":%d,"pad":%q}`, i+1, strings.Repeat("p", big)))
		if _, err := f.leases.Complete(f.ctx, f.project, fence(gone), result, nil); !errors.Is(err, wgerr.LeaseLost) {
			t.Fatalf("call %d: err = %v, want lease_lost", i+1, err)
		}
	}
	// The first 20 calls are kept, and the last 5.
	want := []int{}
	for i := 1; i <= calls; i++ {
		if i <= 20 || i > calls-5 {
			want = append(want, i)
		}
	}
	callOf := func(o lease.Observation) int {
		var p struct {
			Result struct {
				Call int `json:"call"`
			} `json:"result"`
		}
		if err := json.Unmarshal(o.Payload, &p); err != nil {
			t.Fatalf("payload %.80s: %v", o.Payload, err)
		}
		return p.Result.Call
	}

	t.Run("OK", func(t *testing.T) {
		var got []int
		cursor, pages := "", 0
		for pages <= len(want) {
			p, err := f.leases.Observations(f.ctx, f.project, gone.ID, cursor, 0)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			size := 0
			for _, o := range p.Observations {
				size += o.Size()
				got = append(got, callOf(o))
			}
			if len(p.Observations) > 1 && size > page.MaxBytes {
				t.Errorf("page %d holds %d reports of %d bytes, over the budget of %d", pages, len(p.Observations), size, page.MaxBytes)
			}
			if p.Next == "" {
				break
			}
			cursor = p.Next
		}
		if pages < 2 {
			t.Errorf("%d reports of %d bytes in one page", len(got), big)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("the pages gave calls %v, want %v", got, want)
		}
	})
	t.Run("Limit", func(t *testing.T) {
		p, err := f.leases.Observations(f.ctx, f.project, gone.ID, "", 2)
		if err != nil || len(p.Observations) != 2 || p.Next == "" {
			t.Fatalf("a page of 2: %d reports, next %q, %v", len(p.Observations), p.Next, err)
		}
		q, err := f.leases.Observations(f.ctx, f.project, gone.ID, p.Next, 2)
		if err != nil || len(q.Observations) != 2 || callOf(q.Observations[0]) != 3 {
			t.Fatalf("the page after: %d reports, %v", len(q.Observations), err)
		}
	})
	t.Run("ErrCursor", func(t *testing.T) {
		if _, err := f.leases.Observations(f.ctx, f.project, gone.ID, page.Encode("items", 3), 0); wgerr.CodeOf(err) != wgerr.CodeInvalid {
			t.Errorf("another list's cursor: err = %v, want invalid_argument", err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := f.leases.Observations(f.ctx, f.project, uuid.New(), "", 0); wgerr.CodeOf(err) != wgerr.CodeNotFound {
			t.Errorf("no such lease: err = %v, want not_found", err)
		}
	})
}
