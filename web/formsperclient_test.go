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

// stalledForm opens a connection that posts a sign-in form as the client
// at addr (X-Forwarded-For through the test's trusted loopback proxy),
// sends its headers and the start of its body, and leaves it there: with
// a Content-Length of size, or chunked (no length) when size is 0.
func stalledForm(t *testing.T, e *env, addr string, size int64) net.Conn {
	t.Helper()
	host := strings.TrimPrefix(e.srv.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	length, start := fmt.Sprintf("Content-Length: %d", size), "token="
	if size == 0 {
		length, start = "Transfer-Encoding: chunked", "6\r\ntoken=\r\n"
	}
	if _, err := fmt.Fprintf(conn, "POST /signin HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nX-Forwarded-For: %s\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\n%s\r\n\r\n%s", host, e.srv.URL, addr, length, start); err != nil {
		t.Fatal(err)
	}
	return conn
}

// settleAt waits until the budget holds want bytes (the forms sent so far
// let in), failing when it ever holds more, then watches it for four of the
// gate's waits (refusals come after one wait at each of the address's part,
// the forms' share and the budget) to see that the forms refused never
// push it past want.
func settleAt(t *testing.T, gate *bodygate.Gate, want int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); gate.InUse() != want; time.Sleep(5 * time.Millisecond) {
		if got := gate.InUse(); got > want || time.Now().After(deadline) {
			t.Fatalf("stalled forms hold %d bytes of the budget, want %d", got, want)
		}
	}
	for end := time.Now().Add(4 * gate.Wait()); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if got := gate.InUse(); got > want {
			t.Fatalf("stalled forms hold %d bytes of the budget, want at most %d", got, want)
		}
	}
	if got := gate.InUse(); got != want {
		t.Fatalf("stalled forms hold %d bytes of the budget, want %d", got, want)
	}
}

// TestOneAddressCannotHoldTheForms: one client address holds at most a
// quarter of the forms' share of the budget of bodies (the budget 4 MiB,
// the forms' share 1 MiB, an address 256 KiB), whether its stalled forms
// declare their length or not, so that everyone else still signs in and
// sends forms; the room comes back when the stalled client goes away. A
// single address stalling sixteen 64 KiB sign-in forms used to hold the
// whole share, and every person's form got the "Server busy" page until
// the stalled bodies timed out.
func TestOneAddressCannotHoldTheForms(t *testing.T) {
	t.Parallel()
	const (
		capacity = 4 << 20
		part     = capacity / 4 / 4 // an address's part of the forms' share
		// maxForm is a form without a length: it counts as the largest
		// form, 3 MiB and 64 KiB (web's maxFormBytes).
		maxForm = 3<<20 + 64<<10
	)

	for _, tc := range []struct {
		name string
		// sizes are the stalled forms' Content-Length, sent in order; 0
		// is a chunked form.
		sizes []int64
		// held is what they hold of the budget once settled: the
		// address's part, or its one form without a length (3 MiB in the
		// budget, counted as the part's seven eighths, 224 KiB, in the
		// address's part), which leaves no room for a 64 KiB form there.
		held int64
	}{
		{"ContentLength", repeat(24, 64<<10), part},
		{"Chunked", append(repeat(4, 0), repeat(8, 64<<10)...), maxForm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gate := bodygate.New(capacity, 100*time.Millisecond)
			e := setup(t, func(d *web.Deps) { d.Bodies = gate })
			var conns []net.Conn
			for i, size := range tc.sizes {
				conns = append(conns, stalledForm(t, e, "198.51.100.7", size))
				if i == 0 && size == 0 { // the form without a length is in before the rest are sent
					settleAt(t, gate, tc.held)
				}
			}
			settleAt(t, gate, tc.held)

			// Everyone else gets in: a person signs in and sends a form,
			// and a visitor at another address has a part of its own.
			b := e.signIn(e.human)
			b.get("/p/acme/items/new")
			wantStatus(t, b.post("/p/acme/items", url.Values{"title": {"small"}, "priority": {"0"}}), http.StatusSeeOther)
			stalledForm(t, e, "203.0.113.9", 64<<10)
			settleAt(t, gate, tc.held+64<<10)

			for _, c := range conns { // the first address goes away mid-body
				c.Close()
			}
			// Their room comes back: the other address's form alone.
			for deadline := time.Now().Add(10 * time.Second); gate.InUse() != 64<<10; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("after the address went away the budget holds %d bytes, want the other's %d", gate.InUse(), 64<<10)
				}
			}
		})
	}
}

// repeat is n copies of size.
func repeat(n int, size int64) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = size
	}
	return s
}
