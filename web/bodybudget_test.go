package web_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/bodygate"
	"github.com/workgraph-dev/workgraph/web"
)

// TestFormsShareTheBodyBudget: a form takes room in the replica's budget
// of request bodies before it is read, the sign-in form of a visitor
// without a session too. While an anonymous upload that declared 3 MiB
// stalls mid-body, a further large form is refused (429 page with
// Retry-After) and changes nothing, a small form still passes, and the
// room comes back when the stalled client goes away.
func TestFormsShareTheBodyBudget(t *testing.T) {
	t.Parallel()
	gate := bodygate.New(4<<20, 100*time.Millisecond) // bodies over 64 KiB share 3.5 MiB
	e := setup(t, func(d *web.Deps) { d.Bodies = gate })
	b := e.signIn(e.human)
	waitInUse := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); gate.InUse() != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the budget holds %d bytes, want %d", gate.InUse(), want)
			}
		}
	}
	waitInUse(0)

	const stalled = 3 << 20
	host := strings.TrimPrefix(e.srv.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /signin HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\ntoken=", host, e.srv.URL, stalled); err != nil {
		t.Fatal(err)
	}
	waitInUse(stalled)

	large := url.Values{"title": {"large"}, "priority": {"0"}, "body": {strings.Repeat("x", 900_000)}}
	b.get("/p/acme/items/new")
	r := b.post("/p/acme/items", large)
	wantStatus(t, r, http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if n := allItems(t, e); n != 0 {
		t.Fatalf("the refused form stored %d items", n)
	}

	b.get("/p/acme/items/new")
	wantStatus(t, b.post("/p/acme/items", url.Values{"title": {"small"}, "priority": {"0"}}), http.StatusSeeOther)

	conn.Close() // the visitor goes away mid-body
	waitInUse(0)
	b.get("/p/acme/items/new")
	wantStatus(t, b.post("/p/acme/items", large), http.StatusSeeOther)
}
