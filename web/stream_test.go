package web_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/web"
)

// TestEventStreamEndsWithTheSession: a page's event stream sends nothing
// written after its session ended (signed out here; revoking the token
// ends its sessions the same way): the stream ends at the next event. It
// checked the session once, at its start, and went on sending the
// project's events to a browser that had signed out.
func TestEventStreamEndsWithTheSession(t *testing.T) {
	t.Parallel()
	e := setupPool(t, func(pool *pgxpool.Pool, d *web.Deps) {
		follower := events.NewFollower(pool, 20*time.Millisecond, nil)
		follower.Start(context.Background())
		t.Cleanup(follower.Stop)
		d.Events = events.NewReader(pool, follower)
	})
	b := e.signIn(e.human)
	csrf := b.csrf
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/p/acme/events/stream", nil)
	res, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("stream: status %d", res.StatusCode)
	}
	ids := make(chan string, 100)
	go func() {
		defer close(ids)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				ids <- id
			}
		}
	}()
	appendEvent := func() string {
		t.Helper()
		n, err := events.Append(context.Background(), e.pool, events.New{Project: e.project.ID, Type: events.ItemCreated, Actor: "system"})
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatInt(n, 10)
	}
	before := appendEvent()
	select {
	case id := <-ids:
		if id != before {
			t.Fatalf("stream sent event %s, want %s", id, before)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream sent nothing")
	}
	b.csrf = csrf
	if r := b.post("/signout", url.Values{}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: status %d", r.StatusCode)
	}
	after := appendEvent()
	for {
		select {
		case id, ok := <-ids:
			if !ok {
				return // ended, as it must
			}
			if id == after {
				t.Fatalf("the stream of a signed-out session sent event %s, written after the sign-out", after)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the stream of a signed-out session is still open")
		}
	}
}
