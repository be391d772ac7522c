package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/server"
)

// replica starts a server on databaseURL at addr ("127.0.0.1:0": any).
func replica(t *testing.T, databaseURL, addr string) *server.Server {
	t.Helper()
	srv, err := server.Start(context.Background(), server.Config{
		DatabaseURL: databaseURL, Addr: addr, BootstrapToken: adminToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(srv) })
	return srv
}

func shutdown(srv *server.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
}

// writeEvents commits n events of project p through pool (a replica's).
func writeEvents(t *testing.T, pool *pgxpool.Pool, p uuid.UUID, n int) {
	t.Helper()
	for range n {
		if _, err := events.Append(context.Background(), pool, events.New{Project: p, Type: events.AttentionOpened, Actor: "system"}); err != nil {
			t.Fatal(err)
		}
	}
}

// storedSeqs is the numbers of p's events in the database, oldest first.
func storedSeqs(t *testing.T, pool *pgxpool.Pool, p uuid.UUID) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT seq FROM events WHERE project_id = $1 ORDER BY seq`, p)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// TestStreamAcrossReplicas: two servers on one database. Events written
// through one are streamed by the other; a stream stopped mid-way and
// resumed from its last event through the other replica, and a stream
// whose server restarts under it (it reconnects by itself with
// Last-Event-ID), together see every event exactly once, in order.
func TestStreamAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := dbtest.URL(t)
	a, b := replica(t, url, "127.0.0.1:0"), replica(t, url, "127.0.0.1:0")
	admin, _ := client.New(a.URL(), adminToken)
	proj, err := admin.CreateProject(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	p := uuid.MustParse(proj.ID)
	tk, err := admin.CreateToken(ctx, "p", client.CreateTokenRequest{Name: "bot", Role: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	viaA, _ := client.New(a.URL(), tk.Secret)
	viaB, _ := client.New(b.URL(), tk.Secret)

	// Through B, written through A: stop after three.
	writeEvents(t, a.Pool(), p, 5)
	var got []int64
	for e, err := range viaB.Stream(ctx, "p", client.EventsQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Seq)
		if len(got) == 3 {
			break
		}
	}

	// Resumed through A after the last one seen; B restarts under the
	// stream of B started next.
	resumed := make(chan int64, 100)
	go func() {
		defer close(resumed)
		for e, err := range viaA.Stream(ctx, "p", client.EventsQuery{After: got[len(got)-1]}) {
			if err != nil {
				return
			}
			resumed <- e.Seq
		}
	}()
	writeEvents(t, b.Pool(), p, 5)
	want := storedSeqs(t, a.Pool(), p)
	if len(want) < 10 {
		t.Fatalf("%d events stored, want at least 10", len(want))
	}
	for len(got) < len(want) {
		got = append(got, <-resumed)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stopped and resumed through the other replica: %v, stored %v", got, want)
	}

	restarting := make(chan int64, 100)
	go func() {
		defer close(restarting)
		for e, err := range viaB.Stream(ctx, "p", client.EventsQuery{After: want[len(want)-1]}) {
			if err != nil {
				return
			}
			restarting <- e.Seq
		}
	}()
	writeEvents(t, a.Pool(), p, 2)
	var after []int64
	for range 2 {
		after = append(after, <-restarting)
	}
	addr := b.Addr()
	shutdown(b)
	writeEvents(t, a.Pool(), p, 3) // while B is down
	replica(t, url, addr)
	writeEvents(t, a.Pool(), p, 2)
	all := storedSeqs(t, a.Pool(), p)
	for len(after) < len(all)-len(want) {
		after = append(after, <-restarting)
	}
	if fmt.Sprint(after) != fmt.Sprint(all[len(want):]) {
		t.Fatalf("across a restart of its server: %v, stored %v", after, all[len(want):])
	}
	select {
	case extra := <-restarting:
		t.Fatalf("an event beyond the stored ones: %d", extra)
	default:
	}

	// A long poll through the restarted B answers an event written
	// through A.
	polled := make(chan *client.EventPage, 1)
	go func() {
		page, err := viaB.Events(ctx, "p", client.EventsQuery{After: all[len(all)-1], Wait: 60 * time.Second})
		if err != nil {
			t.Error(err)
		}
		polled <- page
	}()
	writeEvents(t, a.Pool(), p, 1)
	page := <-polled
	if page == nil || len(page.Events) != 1 || page.Events[0].Seq <= all[len(all)-1] || page.NextAfter < page.Events[0].Seq {
		t.Fatalf("long poll through the other replica: %+v", page)
	}
}

// TestStreamResumesFromKeepAlive: a keep-alive's id (the stream's
// position: every event its filter selects up to there was sent) is where
// the stream resumes after a reconnection, not its last event, which on a
// filtered stream may be long gone from the log (a reconnection after it
// would be refused 410 events_pruned and end the stream).
func TestStreamResumesFromKeepAlive(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var resumed []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		resumed = append(resumed, r.Header.Get("Last-Event-ID"))
		n := len(resumed)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "retry: 2000\n\n")
		switch n {
		case 1:
			fmt.Fprint(w, "id: 7\nevent: attention.opened\ndata: {\"seq\": 7, \"type\": \"attention.opened\"}\n\n")
			fmt.Fprint(w, "id: 50\n: keep-alive\n\n")
		default:
			fmt.Fprint(w, "id: 51\nevent: attention.opened\ndata: {\"seq\": 51, \"type\": \"attention.opened\"}\n\n")
		}
		// Then the connection ends (a server restart): the client
		// reconnects.
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []int64
	for e, err := range c.Stream(ctx, "p", client.EventsQuery{Types: []string{"attention.opened"}}) {
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, e.Seq); len(got) == 2 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != "[7 51]" || len(resumed) < 2 || resumed[1] != "50" {
		t.Fatalf("events %v; Last-Event-ID of each connection %q, want the keep-alive's 50 on the second", got, resumed)
	}
}

// TestStreamEndedIsTold: a stream the server ends (a restart, a
// shutdown) is reconnected, and the retry it tells names that cause as
// ErrStreamEnded, so a program (the CLI) can say it plainly.
func TestStreamEndedIsTold(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "retry: 2000\n\nid: 1\nevent: item.created\ndata: {\"seq\": 1, \"type\": \"item.created\"}\n\n")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var told client.Retry
	c, err := client.New(srv.URL, "tok", client.WithRetryNotify(func(r client.Retry) {
		told = r
		cancel() // the first retry is all this test reads
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range c.Stream(ctx, "p", client.EventsQuery{}) {
		if err != nil {
			break
		}
	}
	if !errors.Is(told.Err, client.ErrStreamEnded) {
		t.Fatalf("retry told %v, want ErrStreamEnded", told.Err)
	}
}
