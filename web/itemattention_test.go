package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// questionRE is a question of the item page's attention history (the
// questions of this test are "question NNN").
var questionRE = regexp.MustCompile(`<div class="md"><p>question (\d+)</p>`)

// olderRequestsRE is the item page's link to the page of older requests.
var olderRequestsRE = regexp.MustCompile(`href="([^"]*attention=[^"#]*)[^"]*"[^>]*>Older requests`)

// TestItemPageAttentionPaged: the page of an item that collected hundreds
// of questions shows its newest ones, oldest first, and links to the
// older ones page by page, down to the first: no page lists more than a
// page of requests. Each link keeps the page of the other list (the
// leases').
func TestItemPageAttentionPaged(t *testing.T) {
	t.Parallel()
	e := setup(t)
	it := e.mustItem("chatty")
	const n = 120
	if _, err := e.pool.Exec(context.Background(), `
		INSERT INTO attention_requests (project_id, item_id, source, reason, requested_by, question, suggested_answers, blocking, created_at)
		SELECT $1, $2, 'person', 'question', 'ann', format('question %s', lpad(g::text, 3, '0')), '{}', false, now()
		FROM generate_series(1, $3::int) AS g ORDER BY g`, e.project.ID, it.ID, n); err != nil {
		t.Fatal(err)
	}
	b := e.signIn(e.human)
	path := "/p/acme/items/" + it.ID.String() + "?leases=aXRlbS1sZWFzZXM6MQ" // a page of the leases: those before epoch 1
	want := n
	pages := 0
	for ; path != ""; pages++ {
		r := b.get(path)
		wantStatus(t, r, http.StatusOK)
		rows := questionRE.FindAllStringSubmatch(r.body, -1)
		if len(rows) == 0 || len(rows) > 50 {
			t.Fatalf("page %d lists %d requests, want 1 to 50", pages, len(rows))
		}
		for i := len(rows) - 1; i >= 0; i-- {
			if got := rows[i][1]; got != fmt.Sprintf("%03d", want) {
				t.Fatalf("page %d lists question %s, want %03d (newest first across pages, oldest first within one)", pages, got, want)
			}
			want--
		}
		if pages > 0 && !strings.Contains(r.body, ">Newest requests</a>") {
			t.Fatalf("page %d of older requests has no link back to the newest", pages)
		}
		path = ""
		if m := olderRequestsRE.FindStringSubmatch(r.body); m != nil {
			path = html.UnescapeString(m[1])
			if !strings.Contains(path, "leases=") {
				t.Fatalf("the link to older requests %q forgets the page of leases", path)
			}
		}
	}
	if want != 0 || pages != 3 {
		t.Fatalf("the links to older requests stopped at question %d after %d pages, want them to reach the first in 3", want+1, pages)
	}
	wantStatus(t, b.get("/p/acme/items/"+it.ID.String()+"?attention=bogus"), http.StatusBadRequest)
}
