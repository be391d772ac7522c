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

// TestItemPageNamesAnOldQuestionsWorker: a question asked under a lease
// older than the newest page of the item's leases is shown as asked by
// that lease's worker (beside the principal that asked), read from the
// request's own lease, not looked for among the leases the page shows.
func TestItemPageNamesAnOldQuestionsWorker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.mustItem("retried after a question")
	const n = 150
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		SELECT $1, $2, g, CASE WHEN g = 1 THEN 'asker-old' ELSE 'w' END, 'token:agent-key',
		       now() - interval '1 day' + g * interval '1 s',
		       now() - interval '1 day' + g * interval '1 s' + interval '1 minute',
		       now() - interval '1 day' + g * interval '1 s' + interval '500 ms',
		       CASE WHEN g = 1 THEN 'attention_requested' ELSE 'failed' END
		FROM generate_series(1, $3::int) AS g ORDER BY g`, e.project.ID, it.ID, n); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE items SET epoch = $3 WHERE project_id = $1 AND id = $2`, e.project.ID, it.ID, n); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `
		INSERT INTO attention_requests (project_id, item_id, lease_id, epoch, source, requested_by, question,
		    blocking, state, answer, resolved_by, resolved_at, created_at)
		SELECT project_id, item_id, id, epoch, 'worker', principal, 'Which region first?',
		       true, 'resolved', 'eu', 'token:t-human', now() - interval '20 hours', now() - interval '23 hours'
		FROM leases WHERE project_id = $1 AND item_id = $2 AND epoch = 1`, e.project.ID, it.ID); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	r := b.get("/p/acme/items/" + it.ID.String())
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Which region first?", "worker <b>asker-old</b> (token:agent-key)")
}

// TestInboxNamesAnOldQuestionsWorker: an open question asked on an
// earlier lease of its item (a non-blocking one, whose item went on to
// another lease) names, in the inbox, the worker whose lease asked it,
// not only the principal: the inbox read the item's latest lease alone.
func TestInboxNamesAnOldQuestionsWorker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.mustItem("asked, then leased again")
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `
		INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at, ended_at, outcome)
		SELECT $1, $2, g, CASE WHEN g = 1 THEN 'asker-old' ELSE 'w-next' END, 'token:agent-key',
		       now() - interval '1 hour' + g * interval '1 minute',
		       now() - interval '1 hour' + g * interval '1 minute' + interval '10 minutes',
		       now() - interval '1 hour' + g * interval '1 minute' + interval '30 s',
		       'released'
		FROM generate_series(1, 2) AS g ORDER BY g`, e.project.ID, it.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE items SET epoch = 2 WHERE project_id = $1 AND id = $2`, e.project.ID, it.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `
		INSERT INTO attention_requests (project_id, item_id, lease_id, epoch, source, requested_by, question, blocking, created_at)
		SELECT project_id, item_id, id, epoch, 'worker', principal, 'Which region first?', false, now() - interval '50 minutes'
		FROM leases WHERE project_id = $1 AND item_id = $2 AND epoch = 1`, e.project.ID, it.ID); err != nil {
		t.Fatal(err)
	}
	r := e.signIn(e.human).get("/p/acme/inbox")
	wantStatus(t, r, http.StatusOK)
	wantBody(t, r, "Which region first?", "worker <b>asker-old</b> (token:agent-key)")
}
