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

// TestFormRefusedForTheBodyBudgetLeadsBack: a form the budget of bodies
// refuses (its body unread) shows a page written for a person, not the
// API's detail, that says nothing was changed, and whose way back is the
// page the form was on (its Referer, query included; there app.js puts
// back a typed answer), "/" for a Referer of another site.
func TestFormRefusedForTheBodyBudgetLeadsBack(t *testing.T) {
	t.Parallel()
	gate := bodygate.New(256<<10, 50*time.Millisecond) // bodies over 64 KiB share 224 KiB
	e := setup(t, func(d *web.Deps) { d.Bodies = gate })
	b := e.signIn(e.human)
	for _, size := range []int64{224 << 10, 32 << 10} { // held by the API's requests: the budget is full
		release, err := gate.Enter(t.Context(), size)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	if gate.InUse() != 256<<10 {
		t.Fatalf("the budget holds %d bytes, want it full", gate.InUse())
	}

	for _, tc := range []struct{ name, referer, back string }{
		{"OK", e.srv.URL + "/p/acme/items/new?from=inbox", `href="/p/acme/items/new?from=inbox"`},
		{"OtherSite", "https://elsewhere.example/p/acme/items/new", `href="/"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.get("/p/acme/items/new")
			r := b.post("/p/acme/items", url.Values{"title": {"small"}, "priority": {"0"}}, "Referer", tc.referer)
			wantStatus(t, r, http.StatusTooManyRequests)
			if r.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
			if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
				t.Errorf("Content-Type %q, want an HTML page", r.Header.Get("Content-Type"))
			}
			for _, want := range []string{"Server busy", "nothing was changed", tc.back} {
				if !strings.Contains(r.body, want) {
					t.Errorf("the page lacks %q:\n%s", want, r.body)
				}
			}
			for _, api := range []string{"request bodies", "bytes", "retry after 1 s"} {
				if strings.Contains(r.body, api) {
					t.Errorf("the page speaks the API's words %q:\n%s", api, r.body)
				}
			}
			if n := allItems(t, e); n != 0 {
				t.Fatalf("the refused form stored %d items", n)
			}
		})
	}
}

// TestStalledFormsLeaveTheAPIRoom: forms take room before their session
// is known, so the UI's forms hold at most a quarter of the replica's
// budget of bodies. Sixteen visitors without credentials, each at an
// address of its own (one address holds a quarter of the forms' share at
// most: TestOneAddressCannotHoldTheForms), that declare 64 KiB sign-in
// forms and stall mid-body fill that quarter (four are let in, the rest
// refused), and a worker's heartbeat still finds
// room in the budget at once; they used to hold the whole budget, and the
// API refused heartbeats until the stalled bodies timed out.
func TestStalledFormsLeaveTheAPIRoom(t *testing.T) {
	t.Parallel()
	const capacity = 1 << 20
	gate := bodygate.New(capacity, 100*time.Millisecond)
	e := setup(t, func(d *web.Deps) { d.Bodies = gate })
	host := strings.TrimPrefix(e.srv.URL, "http://")
	for i := range 16 {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "POST /signin HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nX-Forwarded-For: 198.51.100.%d\r\n"+
			"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\ntoken=", host, e.srv.URL, i+1, 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	// The forms arrive in a few milliseconds and those refused are
	// refused after the gate's 100 ms; the stalled ones never end.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got := gate.InUse(); got > capacity/4 {
			t.Fatalf("stalled forms hold %d bytes of the budget's %d, want at most a quarter", got, capacity)
		}
	}
	if got := gate.InUse(); got != capacity/4 {
		t.Fatalf("stalled forms hold %d bytes, want the forms' quarter (%d)", got, capacity/4)
	}
	release, err := gate.Enter(t.Context(), 4<<10) // a heartbeat's body
	if err != nil {
		t.Fatalf("a heartbeat found no room beside the stalled forms: %v", err)
	}
	release()
}
