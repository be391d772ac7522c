package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/auth"
	"github.com/workgraph-dev/workgraph/graph"
)

// TestPlanGate: while a plan import whose body is still arriving holds
// most of the replica's room for plan bodies, a second large import waits
// briefly and is refused with 429 rate_limited and Retry-After, storing
// nothing; once the first ends, the same import is created. (Its own
// database: the server commits.)
func TestPlanGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const room = 1 << 20
	a, srv, graphSvc, authSvc := gatedAPI(t, func(c *Config) { c.PlanBytesInFlight, c.PlanWait = room, 50*time.Millisecond })
	project, err := graphSvc.CreateProject(ctx, "plans")
	if err != nil {
		t.Fatal(err)
	}
	_, admin, err := authSvc.Create(ctx, nil, "admin", auth.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}

	// The first import declares 900,000 bytes and sends the first few.
	const slow = 900_000
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /v1/projects/plans/plans HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"items\": [", admin, slow); err != nil {
		t.Fatal(err)
	}
	// Wait until it holds its room (polling, with a bound; nothing is timed).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if a.plans.InUse() >= slow {
			break
		}
	}

	plan, err := json.Marshal(map[string]any{"items": []map[string]any{
		{"key": "big", "title": "a large plan", "body": strings.Repeat("x", 200_000)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	post := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/projects/plans/plans", bytes.NewReader(plan))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusTooManyRequests && !strings.Contains(string(body), `"code":"rate_limited"`) {
			t.Errorf("429 without code rate_limited: %s", body)
		}
		return res
	}
	res := post()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a large plan import while another holds the room: status %d, Retry-After %q; want 429 with Retry-After",
			res.StatusCode, res.Header.Get("Retry-After"))
	}
	items, err := graphSvc.ListItems(ctx, project.ID, graph.ListFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(items.Items) != 0 {
		t.Fatalf("the refused import stored %d items", len(items.Items))
	}

	conn.Close() // the first import ends, its body never complete
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if a.plans.InUse() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ended import kept its room")
		}
	}
	if res := post(); res.StatusCode != http.StatusCreated {
		t.Fatalf("the import once the room is free: status %d, want 201", res.StatusCode)
	}
}
