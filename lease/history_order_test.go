package lease_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// TestHistoryOrders pages through every order of the history two leases at
// a time: grant order both ways, and by how long each lease ran (a live one
// counts until now by the stub clock).
func TestHistoryOrders(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	var ls []lease.Lease
	for _, ran := range []time.Duration{30 * time.Second, 10 * time.Second, 50 * time.Second, 20 * time.Second} {
		_, l := f.claimNew(t, "w")
		f.clock.Advance(ran)
		if _, err := f.leases.Complete(f.ctx, f.project, fence(l), json.RawMessage(`{"ok":true}`), nil); err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	_, live := f.claimNew(t, "w") // has run 40 s when the pages are read (the TTL is a minute)
	f.clock.Advance(40 * time.Second)
	ls = append(ls, live)

	ids := func(ix ...int) []uuid.UUID {
		out := make([]uuid.UUID, len(ix))
		for i, x := range ix {
			out[i] = ls[x].ID
		}
		return out
	}
	for order, want := range map[lease.HistoryOrder][]uuid.UUID{
		"":                  ids(0, 1, 2, 3, 4),
		lease.OrderAcquired: ids(0, 1, 2, 3, 4),
		lease.OrderNewest:   ids(4, 3, 2, 1, 0),
		lease.OrderShortest: ids(1, 3, 0, 4, 2),
		lease.OrderLongest:  ids(2, 4, 0, 3, 1),
	} {
		var got []uuid.UUID
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("%q: the pages do not end", order)
			}
			pg, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Order: order, Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatalf("%q: %v", order, err)
			}
			for _, l := range pg.Leases {
				got = append(got, l.ID)
			}
			if cursor = pg.NextCursor; cursor == "" {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("order %q:\n got %v\nwant %v", order, got, want)
		}
	}
	if _, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Order: "worker"}); !errors.Is(err, wgerr.Invalid) {
		t.Errorf("order worker: %v, want invalid_argument", err)
	}
	pg, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Order: lease.OrderNewest, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.History(f.ctx, f.project, lease.HistoryFilter{Order: lease.OrderLongest, Cursor: pg.NextCursor}); !errors.Is(err, wgerr.Invalid) {
		t.Errorf("a newest-first cursor in the longest-first order: %v, want invalid_argument", err)
	}
}
