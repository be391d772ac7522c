package lease_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/lease"
)

// TestLeaseStepsLeaveTheTexts: the trigram indexes of text search are on
// item_texts, none on items, and a claim, a heartbeat and a completion
// write nothing there (migration 00052). Each of those steps rewrites the
// item's row without HOT, which inserts an entry in every index of items:
// with the trigram indexes there, one entry per distinct trigram of the
// title and body, 58 WAL records and 0.83 ms for a body of about 2 KB
// (docs/benchmarks-record.md, "The texts off the claim's path").
func TestLeaseStepsLeaveTheTexts(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	words := []string{"parse", "the", "configuration", "file", "update", "schema", "handler", "query", "index", "tests"}
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "%s%d ", words[i%len(words)], i)
	}
	b.WriteString("quokkafish")
	it := f.item(t, graph.NewItem{Title: "rewrite the configuration parser", Body: b.String()})

	rows, err := f.conn.Query(f.ctx, `
		SELECT c.relname, r.relname
		FROM pg_index x
		JOIN pg_class c ON c.oid = x.indexrelid
		JOIN pg_class r ON r.oid = x.indrelid
		WHERE EXISTS (SELECT 1 FROM pg_opclass o WHERE o.oid = ANY (x.indclass::oid[]) AND o.opcname = 'gin_trgm_ops')
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for rows.Next() {
		var index, table string
		if err := rows.Scan(&index, &table); err != nil {
			t.Fatal(err)
		}
		found = append(found, index)
		if table != "item_texts" {
			t.Errorf("trigram index %s is on %s: every claim and completion rewrites its entries", index, table)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(found) < 2 {
		t.Fatalf("trigram indexes %v: want the title's and the body's", found)
	}

	written := func() int64 {
		t.Helper()
		var n int64
		if err := f.conn.QueryRow(f.ctx, `
			SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint
			FROM pg_stat_xact_user_tables WHERE relname = 'item_texts'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := written()
	if before == 0 {
		t.Fatal("creating the item wrote no row of item_texts")
	}
	c := f.claim(t, "w")
	if c.Lease.ItemID != it.ID {
		t.Fatalf("claimed %s, want %s", c.Lease.ItemID, it.ID)
	}
	if _, err := f.leases.Heartbeat(f.ctx, f.project, fence(c.Lease), lease.Heartbeat{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.leases.Complete(f.ctx, f.project, fence(c.Lease), nil, nil); err != nil {
		t.Fatal(err)
	}
	if after := written(); after != before {
		t.Errorf("claim, heartbeat and completion wrote %d rows of item_texts", after-before)
	}

	// The search still finds the item by a word of its body and of its
	// title; and an item whose body changed is found by its new body only.
	for text, want := range map[string]int{"QUOKKAFISH": 1, "configuration parser": 1, "zebra": 0} {
		p, err := f.graph.ListItems(f.ctx, f.project, graph.ListFilter{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != want || (want == 1 && p.Items[0].ID != it.ID) {
			t.Errorf("search for %q found %d items, want %d", text, len(p.Items), want)
		}
	}
	other := f.item(t, graph.NewItem{Title: "another task", Body: "alpha beta"})
	body := "nothing left"
	if _, err := f.graph.UpdateItem(f.ctx, f.project, other.ID, graph.ItemPatch{Body: &body}); err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]int{"alpha beta": 0, "nothing left": 1} {
		p, err := f.graph.ListItems(f.ctx, f.project, graph.ListFilter{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != want {
			t.Errorf("after a body changed, search for %q found %d items, want %d", text, len(p.Items), want)
		}
	}
}
