package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/workgraph-dev/workgraph/server"
)

// TestMetricsCountPageStreams: a web page's live event stream counts in
// workgraph_event_streams while it is open, as the API's streams do, and
// no longer once its reader has gone.
func TestMetricsCountPageStreams(t *testing.T) {
	t.Parallel()
	srv := start(t, func(c *server.Config) { c.MetricsAddr = "127.0.0.1:0" })
	call(t, srv, "POST", "/v1/projects", map[string]any{"name": "m"}, 201, nil)
	b := newBrowser(t, srv)
	if status := b.signIn(adminToken); status != http.StatusSeeOther {
		t.Fatalf("sign in: %d, want 303", status)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+"/p/m/events/stream", nil)
	res, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("page stream: %d %q, want 200 text/event-stream", res.StatusCode, res.Header.Get("Content-Type"))
	}
	eventually(t, srv, "the page stream counted", func(m map[string]float64) bool { return m["workgraph_event_streams"] == 1 })
	cancel()
	eventually(t, srv, "no live stream", func(m map[string]float64) bool { return m["workgraph_event_streams"] == 0 })
}
