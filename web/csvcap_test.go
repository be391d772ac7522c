package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/workgraph-dev/workgraph/web"
)

// TestLeasesCSVSaysWhereItStopped: an export of a history longer than the
// export's bound (Deps.CSVMaxRows) writes that many leases, oldest first,
// and ends with a line that says the file stops there and how to export
// the rest (since= a second before the last lease's acquisition, to the
// second: the next export repeats a few leases, never misses one); without
// it, a person had the first 100,000 leases of a longer history and no
// sign that the rest was missing. A history within the bound has no such
// line.
func TestLeasesCSVSaysWhereItStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t, func(d *web.Deps) { d.CSVMaxRows = 3 })
	if _, err := e.pool.Exec(ctx, `
		WITH it AS (INSERT INTO items (project_id, title, status, epoch, finished_at, created_by)
		            VALUES ($1, 'long history', 'done', 5, now(), 'test') RETURNING id)
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		SELECT $1, it.id, g, 'w' || g, 'test', timestamptz '2026-11-01 10:00:00' + g * interval '1 minute',
		       timestamptz '2026-11-01 11:00:00', timestamptz '2026-11-01 10:00:30' + g * interval '1 minute', 'released'
		FROM it, generate_series(1, 5) g`, e.project.ID); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	r := b.get("/p/acme/leases.csv")
	wantStatus(t, r, http.StatusOK)
	lines := strings.Split(strings.TrimSpace(r.body), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want the header, 3 leases and the note:\n%s", len(lines), r.body)
	}
	for i, w := range []string{"w1", "w2", "w3"} {
		if !strings.Contains(lines[i+1], ","+w+",") {
			t.Errorf("line %d is %q, want the lease of %s", i+1, lines[i+1], w)
		}
	}
	if !strings.HasPrefix(lines[4], "truncated:") || !strings.Contains(lines[4], "3 leases") ||
		!strings.Contains(lines[4], "since=2026-11-01T10:02:59") {
		t.Errorf("last line %q, want the note that the export stopped after 3 leases, with since=2026-11-01T10:02:59", lines[4])
	}
	r = b.get("/p/acme/leases.csv?since=2026-11-01T10:02:59")
	wantStatus(t, r, http.StatusOK)
	if lines := strings.Split(strings.TrimSpace(r.body), "\n"); len(lines) != 4 || strings.Contains(r.body, "truncated") ||
		!strings.Contains(lines[1], ",w3,") {
		t.Errorf("the rest: %d lines, want the header and the leases of w3 (again), w4 and w5, no note:\n%s", len(lines), r.body)
	}
}
