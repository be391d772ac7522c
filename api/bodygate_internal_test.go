package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/bodygate"
	"github.com/workgraph-dev/workgraph/graph"
)

// TestBodyBudget: while uploads that send their headers and part of a
// large body, then stall, hold the large bodies' share of the replica's
// budget of bodies, a further large body waits briefly and is refused with
// 429 rate_limited and Retry-After, storing nothing, while a small body (a
// worker's heartbeat, an item without a description) still passes, and so
// does a plan import (bounded by its own gate, not counted twice). When
// the stalled clients disconnect mid-body their room comes back (nothing
// leaks) and the large body is created. (Its own database: the server
// commits.)
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const budget = 4 << 20 // bodies over 64 KiB share 3.5 MiB of it
	gate := bodygate.New(budget, 100*time.Millisecond)
	_, srv, graphSvc, authSvc := gatedAPI(t, func(c *Config) { c.Bodies = gate })
	project, err := graphSvc.CreateProject(ctx, "bodies")
	if err != nil {
		t.Fatal(err)
	}
	_, admin, err := authSvc.Create(ctx, nil, "admin", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}

	// Three uploads declare 1 MiB each, send a few bytes and stall.
	const stalled = 3
	var conns []net.Conn
	for range stalled {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "POST /v1/projects/bodies/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"title\": \"slow\", \"body\": \"", admin, maxBodyBytes); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
	}
	// Wait until they hold their room (polling, with a bound; nothing is timed).
	waitInUse := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); gate.InUse() != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the budget holds %d bytes, want %d", gate.InUse(), want)
			}
		}
	}
	waitInUse(stalled * maxBodyBytes)

	post := func(path string, body any) *http.Response {
		t.Helper()
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusTooManyRequests && !strings.Contains(string(got), `"code":"rate_limited"`) {
			t.Errorf("429 without code rate_limited: %s", got)
		}
		return res
	}
	large := map[string]any{"title": "large", "body": strings.Repeat("x", 900_000)}
	count := func() int {
		t.Helper()
		items, err := graphSvc.ListItems(ctx, project.ID, graph.ListFilter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(items.Items)
	}

	t.Run("ErrLargeBodyRateLimited", func(t *testing.T) {
		res := post("/v1/projects/bodies/items", large)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Fatalf("a large body while stalled uploads hold the room: status %d, Retry-After %q; want 429 with Retry-After",
				res.StatusCode, res.Header.Get("Retry-After"))
		}
		if n := count(); n != 0 {
			t.Fatalf("the refused body stored %d items", n)
		}
	})
	t.Run("SmallBodyPasses", func(t *testing.T) {
		if res := post("/v1/projects/bodies/items", map[string]any{"title": "small"}); res.StatusCode != http.StatusCreated {
			t.Fatalf("a small body beside the stalled uploads: status %d, want 201", res.StatusCode)
		}
	})
	t.Run("PlanNotCountedTwice", func(t *testing.T) {
		plan := map[string]any{"items": []map[string]any{{"key": "p", "title": "planned", "body": strings.Repeat("y", 900_000)}}}
		if res := post("/v1/projects/bodies/plans", plan); res.StatusCode != http.StatusCreated {
			t.Fatalf("a plan import beside the stalled uploads: status %d, want 201 (its own gate bounds it)", res.StatusCode)
		}
	})

	for _, c := range conns {
		c.Close() // the clients go away mid-body
	}
	waitInUse(0)
	if res := post("/v1/projects/bodies/items", large); res.StatusCode != http.StatusCreated {
		t.Fatalf("the large body once the stalled uploads ended: status %d, want 201", res.StatusCode)
	}
}

// TestBodyWithoutLengthKeepsItsSize: a body sent without a Content-Length
// takes its route's limit while it arrives, and once read whole keeps only
// its size for the rest of the request (a long-poll claim sent chunked
// held 1 MiB of the budget for its whole wait); all of it comes back when
// the request ends.
func TestBodyWithoutLengthKeepsItsSize(t *testing.T) {
	t.Parallel()
	gate := bodygate.New(4<<20, 50*time.Millisecond)
	a := &API{bodies: gate}
	const body = `{"worker": "w-1", "wait_seconds": 20}`
	req := httptest.NewRequest(http.MethodPost, "/v1/projects/p/claims", struct{ io.Reader }{strings.NewReader(body)})
	req.ContentLength = -1
	c := echo.New().NewContext(req, httptest.NewRecorder())
	ran := false
	err := a.gateBodies(func(c echo.Context) error {
		ran = true
		if got := gate.InUse(); got != maxBodyBytes {
			t.Errorf("before the body is read: %d bytes held, want the route's limit %d", got, maxBodyBytes)
		}
		if _, err := readBody(c); err != nil {
			return err
		}
		if got := gate.InUse(); got != int64(len(body)) {
			t.Errorf("once the body is read: %d bytes held, want its size %d", got, len(body))
		}
		return nil
	})(c)
	if err != nil || !ran {
		t.Fatalf("handler ran %v, err %v", ran, err)
	}
	if got := gate.InUse(); got != 0 {
		t.Fatalf("after the request: %d bytes held, want 0", got)
	}
}
