package lease_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/page"
)

// docBytes is the bytes of the JSON documents the leases carry (results,
// progress, outcome details) as a page answers them: what a page of
// leases that carry large documents is made of.
func docBytes(ls []lease.Lease, progressTimes int) int {
	n := 0
	for _, l := range ls {
		n += len(l.Result) + len(l.OutcomeDetail) + progressTimes*len(l.Progress)
	}
	return n
}

// bigDoc is a JSON document of about n bytes.
func bigDoc(n int) string {
	b, _ := json.Marshal(map[string]string{"doc": strings.Repeat("x", n)})
	return string(b)
}

// TestItemLeasesByteBudget: an item's leases page (the web item page)
// whose leases carry large results ends once they pass the byte budget
// (page.MaxBytes), with Older at its oldest lease, never empty, a lease
// larger than the budget alone on a page of its own; following Older
// shows every lease exactly once, newest page first. It used to answer
// its limit of leases whatever their size (100 leases of 2 MiB: 200 MiB).
func TestItemLeasesByteBudget(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	const n, mib = 12, 1 << 20
	f.doneItems(t, 1)
	var id uuid.UUID
	if err := f.conn.QueryRow(f.ctx, `SELECT id FROM items WHERE project_id = $1`, f.project).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// Epochs 1..n completed with a result of 700 KiB, epoch 5's of 5 MiB;
	// epoch 9 failed, without one.
	if _, err := f.conn.Exec(f.ctx, `
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome, result)
		SELECT $1, $2, g, 'w', 'test', now() - interval '1 day' + g * interval '1 s',
		       now() - interval '1 day' + g * interval '1 s' + interval '1 minute',
		       now() - interval '1 day' + g * interval '1 s' + interval '500 ms',
		       CASE g WHEN 9 THEN 'failed' ELSE 'completed' END,
		       CASE g WHEN 5 THEN $4::jsonb WHEN 9 THEN NULL ELSE $3::jsonb END
		FROM generate_series(1, $5::int) AS g`, f.project, id, bigDoc(700<<10), bigDoc(5*mib), n); err != nil {
		t.Fatal(err)
	}
	if _, err := f.conn.Exec(f.ctx, `UPDATE items SET epoch = $2 WHERE project_id = $1`, f.project, n); err != nil {
		t.Fatal(err)
	}
	want, cursor := int64(n), ""
	var sizes []int
	for range n + 1 {
		p, err := f.leases.ItemLeases(f.ctx, f.project, id, cursor, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Leases) == 0 {
			t.Fatalf("an empty page before epoch %d", want+1)
		}
		if b := docBytes(p.Leases, 1); len(p.Leases) > 1 && b > page.MaxBytes {
			t.Errorf("a page of %d leases carries %d bytes of results, over the budget of %d", len(p.Leases), b, page.MaxBytes)
		}
		for i := len(p.Leases) - 1; i >= 0; i-- {
			if l := p.Leases[i]; l.Epoch != want || l.ItemID != id {
				t.Fatalf("lease %d of a page: epoch %d, want %d", i, l.Epoch, want)
			}
			want--
		}
		sizes = append(sizes, len(p.Leases))
		if cursor = p.Older; cursor == "" {
			break
		}
	}
	if want != 0 {
		t.Fatalf("paging ended before epoch %d (pages %v)", want+1, sizes)
	}
	// 700 KiB each: 5 fit in a page; 9, without a result, among them; 6
	// before 5 (5 MiB) on a page of its own; 5 alone.
	if fmt.Sprint(sizes) != "[6 1 1 4]" {
		t.Errorf("pages of %v leases, want [6 1 1 4]", sizes)
	}
}

// TestFleetPageByteBudget: the fleet's page of live leases (the web
// workers page) whose leases carry large progress documents ends once
// they pass the byte budget (each lease's progress counted twice: the
// page shows it with the lease and with its activity), with Next at its
// last lease, never empty, a lease larger than the budget alone on a page
// of its own; following Next shows every live lease exactly once, in the
// fleet's order. It used to answer its limit of leases whatever their
// progress.
func TestFleetPageByteBudget(t *testing.T) {
	t.Parallel()
	f := setup(t, lease.Config{})
	const n, kib = 9, 1 << 10
	var ids []uuid.UUID
	for i := range n {
		_, l := f.claimNew(t, fmt.Sprintf("w%d", i))
		size := 500 * kib
		switch i {
		case 3:
			size = 3 * 1024 * kib // twice on the page: over the budget alone
		case 6:
			size = 0
		}
		hb := lease.Heartbeat{}
		if size > 0 {
			hb.Progress = json.RawMessage(bigDoc(size))
		}
		f.heartbeat(t, l, hb)
		ids = append(ids, l.ID)
	}
	var seen []uuid.UUID
	var sizes []int
	cursor := ""
	for range n + 1 {
		p, err := f.leases.FleetPage(f.ctx, f.project, cursor, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Active) == 0 || len(p.Activity) != len(p.Active) || p.Total != n {
			t.Fatalf("a page of %d leases and %d activities (total %d)", len(p.Active), len(p.Activity), p.Total)
		}
		if b := docBytes(p.Active, 2); len(p.Active) > 1 && b > page.MaxBytes {
			t.Errorf("a page of %d leases carries %d bytes of progress, over the budget of %d", len(p.Active), b, page.MaxBytes)
		}
		for i, l := range p.Active {
			if p.Activity[i].LeaseID != l.ID {
				t.Fatalf("activity %d is of lease %s, want %s", i, p.Activity[i].LeaseID, l.ID)
			}
			seen = append(seen, l.ID)
		}
		sizes = append(sizes, len(p.Active))
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if fmt.Sprint(seen) != fmt.Sprint(ids) {
		t.Fatalf("the pages showed %v, want every live lease once in claim order %v", seen, ids)
	}
	// 500 KiB twice each: 4 fit in a page; the first 3, before the lease
	// of 3 MiB (6 on the page) alone; then the 5 others, one without
	// progress.
	if fmt.Sprint(sizes) != "[3 1 5]" {
		t.Errorf("pages of %v leases, want [3 1 5]", sizes)
	}
}
