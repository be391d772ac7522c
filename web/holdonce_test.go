package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/web"
)

// TestHoldTwiceOneHold: the Hold button pressed again by the person who
// holds the item places no second hold (which would need releasing too)
// and says the item is held already, also when the presses arrive at
// once; another person's press places their own hold.
func TestHoldTwiceOneHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	openHolds := func(item uuid.UUID) int {
		t.Helper()
		var n int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM attention_requests
			WHERE project_id = $1 AND item_id = $2 AND reason = 'hold' AND state = 'open'`, e.project.ID, item).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	b := e.signIn(e.human)

	t.Run("Twice", func(t *testing.T) {
		it := e.mustItem("held twice")
		path := "/p/acme/items/" + it.ID.String()
		b.get(path)
		wantStatus(t, b.post(path+"/hold", nil), http.StatusSeeOther)
		wantBody(t, b.get(path), "Hold placed")
		wantStatus(t, b.post(path+"/hold", url.Values{"question": {"again"}}), http.StatusSeeOther)
		wantBody(t, b.get(path), "You already hold this item")
		if n := openHolds(it.ID); n != 1 {
			t.Fatalf("%d open holds after pressing Hold twice, want 1", n)
		}
	})
	t.Run("AtOnce", func(t *testing.T) {
		it := e.mustItem("held at once")
		path := "/p/acme/items/" + it.ID.String()
		b.get(path)
		form := url.Values{"csrf": {b.csrf}}.Encode()
		var wg sync.WaitGroup
		statuses := make([]int, 6)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path+"/hold", strings.NewReader(form))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", e.srv.URL)
				res, err := b.c.Do(req)
				if err != nil {
					return
				}
				res.Body.Close()
				statuses[i] = res.StatusCode
			}()
		}
		wg.Wait()
		for i, s := range statuses {
			if s != http.StatusSeeOther {
				t.Errorf("press %d: status %d, want 303", i, s)
			}
		}
		if n := openHolds(it.ID); n != 1 {
			t.Fatalf("%d open holds after six presses at once, want 1", n)
		}
	})
	t.Run("AnotherPerson", func(t *testing.T) {
		it := e.mustItem("held by two")
		path := "/p/acme/items/" + it.ID.String()
		b.get(path)
		wantStatus(t, b.post(path+"/hold", nil), http.StatusSeeOther)
		_, other, err := e.auth.Create(ctx, &e.project.ID, "t-human-2", auth.RoleHuman)
		if err != nil {
			t.Fatal(err)
		}
		o := e.signIn(other)
		o.get(path)
		wantStatus(t, o.post(path+"/hold", nil), http.StatusSeeOther)
		wantBody(t, o.get(path), "Hold placed")
		if n := openHolds(it.ID); n != 2 {
			t.Fatalf("%d open holds after two people pressed Hold, want 2", n)
		}
	})
}

// TestHoldTwiceSaysWhenInItsWords: the note that the person holds the
// item already says when the hold was placed as the UI's times read ("just
// now", "5 min ago"), measured against the replica's clock though the hold
// was stamped by the database's: a replica clock behind the database's
// reads as just now, never as a negative time ("-59m 59s ago").
func TestHoldTwiceSaysWhenInItsWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		skew time.Duration // the replica's clock minus the database's
		want string
	}{
		{"ClockBehind", -time.Hour, "(placed just now)"},
		{"ClockAhead", 5*time.Minute + 10*time.Second, "(placed 5 min ago)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, func(d *web.Deps) { d.Local = func() time.Time { return time.Now().Add(tc.skew) } })
			b := e.signIn(e.human)
			it := e.mustItem("held twice")
			path := "/p/acme/items/" + it.ID.String()
			b.get(path)
			wantStatus(t, b.post(path+"/hold", nil), http.StatusSeeOther)
			b.get(path)
			wantStatus(t, b.post(path+"/hold", nil), http.StatusSeeOther)
			wantBody(t, b.get(path), "You already hold this item "+tc.want)
		})
	}
}

// TestHoldReleasedSaysSo: releasing a hold from the inbox ("Release the
// hold") is confirmed as the hold released, not as a question dismissed.
func TestHoldReleasedSaysSo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.signIn(e.human)
	hold, err := e.att.Hold(context.Background(), e.project.ID, e.mustItem("held").ID, "", "token:t-human")
	if err != nil {
		t.Fatal(err)
	}
	b.get("/p/acme/inbox")
	r := b.post("/p/acme/attention/"+hold.ID.String()+"/dismiss", nil)
	wantStatus(t, r, http.StatusSeeOther)
	page := b.get(r.Header.Get("Location"))
	wantBody(t, page, "Hold released: <a href=")
	if strings.Contains(page.body, "Dismissed:") {
		t.Errorf("a released hold is confirmed as dismissed:\n%s", page.body)
	}
}
