package lease_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
)

// TestItemLeasesPages: an item claimed thousands of times is read a page
// at a time, newest page first and oldest first within a page, each page
// reading its own rows of the leases table only (a keyset on the item's
// epochs), its total counted without reading them; following Older
// reaches the item's first lease.
func TestItemLeasesPages(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	const n, limit = 3000, 100
	f.doneItems(t, 2)
	var id, other uuid.UUID
	if err := f.conn.QueryRow(f.ctx, `SELECT (array_agg(id ORDER BY seq))[1], (array_agg(id ORDER BY seq))[2] FROM items WHERE project_id = $1`,
		f.project).Scan(&id, &other); err != nil {
		t.Fatal(err)
	}
	// n ended leases of the item (epochs 1..n), and as many of another
	// item of the project, interleaved in the history.
	if _, err := f.conn.Exec(f.ctx, `
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		SELECT $1, it.id, g, 'w', 'test', now() - interval '1 day' + g * interval '1 s',
		       now() - interval '1 day' + g * interval '1 s' + interval '1 minute',
		       now() - interval '1 day' + g * interval '1 s' + interval '500 ms', 'failed'
		FROM generate_series(1, $2::int) AS g, unnest(ARRAY[$3::uuid, $4::uuid]) AS it(id)
		ORDER BY g`, f.project, n, id, other); err != nil {
		t.Fatal(err)
	}
	if _, err := f.conn.Exec(f.ctx, `UPDATE items SET epoch = $2 WHERE project_id = $1`, f.project, n); err != nil {
		t.Fatal(err)
	}
	fetched := func() int64 {
		var v int64
		if err := f.conn.QueryRow(f.ctx, `SELECT pg_stat_get_xact_tuples_fetched('leases'::regclass)`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := int64(n)
	cursor, pages := "", 0
	for {
		before := fetched()
		p, err := f.leases.ItemLeases(f.ctx, f.project, id, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		if read := fetched() - before; read > limit+1 {
			t.Fatalf("page %d read %d lease rows, want at most %d", pages, read, limit+1)
		}
		if p.Total != n {
			t.Fatalf("total %d, want %d", p.Total, n)
		}
		if len(p.Leases) != limit {
			t.Fatalf("page %d has %d leases, want %d", pages, len(p.Leases), limit)
		}
		for i := len(p.Leases) - 1; i >= 0; i-- {
			if l := p.Leases[i]; l.Epoch != want || l.ItemID != id {
				t.Fatalf("page %d lease %d: epoch %d of item %s, want epoch %d of %s", pages, i, l.Epoch, l.ItemID, want, id)
			}
			want--
		}
		pages++
		if p.Older == "" {
			break
		}
		cursor = p.Older
	}
	if want != 0 || pages != n/limit {
		t.Fatalf("paging ended at epoch %d after %d pages, want the first lease after %d", want+1, pages, n/limit)
	}
	if _, err := f.leases.ItemLeases(f.ctx, f.project, id, "not a cursor", limit); err == nil {
		t.Error("a bad cursor was accepted")
	}
}
