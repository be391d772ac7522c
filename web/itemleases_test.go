package web_test

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"testing"
)

// leaseRowRE is a row of the item page's lease table: its epoch.
var leaseRowRE = regexp.MustCompile(`<tr><td>(\d+)</td><td><span class="worker-name"`)

// olderLeasesRE is the item page's link to the page of older leases.
var olderLeasesRE = regexp.MustCompile(`href="([^"]*leases=[^"#]*)[^"]*"[^>]*>Older leases`)

// TestItemPageLeasesPaged: the page of an item claimed hundreds of times
// shows its newest leases and the count of all, and links to the older
// ones page by page, down to the first: no page lists more than a page of
// leases.
func TestItemPageLeasesPaged(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.mustItem("retried")
	const n = 250
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		SELECT $1, $2, g, 'w', 'test', now() - interval '1 day' + g * interval '1 s',
		       now() - interval '1 day' + g * interval '1 s' + interval '1 minute',
		       now() - interval '1 day' + g * interval '1 s' + interval '500 ms', 'failed'
		FROM generate_series(1, $3::int) AS g ORDER BY g`, e.project.ID, it.ID, n); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE items SET epoch = $3 WHERE project_id = $1 AND id = $2`, e.project.ID, it.ID, n); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	path := "/p/acme/items/" + it.ID.String()
	seen := map[int]bool{}
	want := n
	for pages := 0; path != ""; pages++ {
		r := b.get(path)
		wantStatus(t, r, http.StatusOK)
		if pages == 0 {
			wantBody(t, r, strconv.Itoa(n)+" leases")
		}
		rows := leaseRowRE.FindAllStringSubmatch(r.body, -1)
		if len(rows) == 0 || len(rows) > 100 {
			t.Fatalf("page %d lists %d leases, want 1 to 100", pages, len(rows))
		}
		for i := len(rows) - 1; i >= 0; i-- {
			epoch, _ := strconv.Atoi(rows[i][1])
			if epoch != want || seen[epoch] {
				t.Fatalf("page %d lists epoch %d, want %d (newest first across pages, oldest first within one)", pages, epoch, want)
			}
			seen[epoch] = true
			want--
		}
		path = ""
		if m := olderLeasesRE.FindStringSubmatch(r.body); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	if want != 0 {
		t.Fatalf("the links to older leases stopped at epoch %d, want them to reach the first", want+1)
	}
	r := b.get("/p/acme/items/" + it.ID.String() + "?leases=bogus")
	wantStatus(t, r, http.StatusBadRequest)
}
