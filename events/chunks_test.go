package events_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/page"
)

// TestReadChunkedPagesAreExact: reads of the log in chunks (page.Read),
// cut by their limit or their byte budget (every 23rd event has a 900 KiB
// payload), give every event exactly once, in order, at limits below,
// across and above a chunk, with a type filter and without.
func TestReadChunkedPagesAreExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.New(t) // the horizon needs committed events
	p := project(t, pool)
	const n = 130
	var all, created []int64
	for i := range n {
		typ, payload := events.ItemCreated, map[string]string{"i": fmt.Sprint(i)}
		if i%3 == 1 {
			typ = events.ItemUpdated
		}
		if i%23 == 5 {
			payload["x"] = strings.Repeat("x", 900<<10)
		}
		seq, err := events.Append(ctx, pool, events.New{Project: p, Type: typ, Actor: "system", Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, seq)
		if typ == events.ItemCreated {
			created = append(created, seq)
		}
	}
	r := events.NewReader(pool, nil)
	for _, limit := range []int{7, page.FirstChunk, 100, events.MaxLimit} {
		for name, types := range map[string][]string{"All": nil, "Created": {events.ItemCreated}} {
			t.Run(fmt.Sprintf("%s/%d", name, limit), func(t *testing.T) {
				want := all
				if types != nil {
					want = created
				}
				var got []int64
				f := events.Filter{Limit: limit, Types: types}
				for reads := 0; ; reads++ {
					if reads > 1000 {
						t.Fatal("no last read")
					}
					pg, err := r.Read(ctx, &p, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range pg.Events {
						got = append(got, e.Seq)
					}
					if !pg.More() {
						break
					}
					f.After = pg.Next
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%d events read, not the %d appended, each once, in order", len(got), len(want))
				}
			})
		}
	}
}

// TestReadMemoryIsBoundedByTheBudget measures what one read of the log
// allocates over events of a 2 MiB payload: a page at limit 100 holds one
// (the budget is 4 MiB), and the read goes in chunks (page.Read) until
// the budget is spent, so it allocates about a chunk of events, not the
// limit it read when the read was bounded by rows alone.
//
// Not parallel: runtime.MemStats counts the whole process, and a test
// that is not parallel runs alone.
func TestReadMemoryIsBoundedByTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 120 MiB of events")
	}
	ctx := context.Background()
	pool := dbtest.New(t) // the horizon needs committed events
	p := project(t, pool)
	const n, limit = 60, 100
	for range n {
		if _, err := events.Append(ctx, pool, events.New{Project: p, Type: events.ItemCreated, Actor: "system",
			Payload: map[string]string{"x": strings.Repeat("x", 2<<20)}}); err != nil {
			t.Fatal(err)
		}
	}
	r := events.NewReader(pool, nil)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	pg, err := r.Read(ctx, &p, events.Filter{Limit: limit})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("limit %d: %d events on the page, %.1f MiB allocated", limit, len(pg.Events), float64(alloc)/(1<<20))
	if len(pg.Events) != 1 || !pg.More() {
		t.Fatalf("%d events, more %v; want 1 event of 2 MiB and more", len(pg.Events), pg.More())
	}
	const bound = 64 << 20
	if alloc > bound {
		t.Errorf("one read allocated %.1f MiB, over %d MiB: the read is not bounded by the budget", float64(alloc)/(1<<20), bound>>20)
	}
}
