package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/graph"
)

// Workload 10: webhooks. Latency: a person's POST
// /v1/projects/{p}/items/{id}/attention (a hold, which writes
// attention.opened) until the webhook receiver, a local httptest server
// subscribed to attention.opened, gets the request; one at a time, so each
// is the whole path (commit, horizon, fan-out, claim, signing, HTTP).
// Rate: a plan import commits -plan-items item.created events at once and
// the in-process server (one replica, default concurrency) delivers them
// to a receiver that answers 204 at once; deliveries per second from the
// import's commit to the last request received.

func init() {
	register(workload{id: 10, name: "webhooks (POST attention -> receiver hit; delivery rate of one replica)", run: runW10})
}

// receiver counts the requests of one webhook and reports each arrival.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	n     int
	last  time.Time
	arriv chan time.Time
}

func newReceiver() *receiver {
	rc := &receiver{arriv: make(chan time.Time, 1<<16)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		rc.mu.Lock()
		rc.n++
		rc.last = now
		rc.mu.Unlock()
		select {
		case rc.arriv <- now:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return rc
}

func (rc *receiver) count() (int, time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.n, rc.last
}

func runW10(ctx context.Context, e *env) error {
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	if err := w10Latency(ctx, e, s); err != nil {
		return err
	}
	return w10Rate(ctx, e, s)
}

func w10Latency(ctx context.Context, e *env, s *benchServer) error {
	name := e.newProjectName("w10")
	if _, err := s.restProject(ctx, name); err != nil {
		return err
	}
	rc := newReceiver()
	defer rc.Close()
	if _, err := s.admin.CreateWebhook(ctx, name, client.CreateWebhookRequest{URL: rc.URL, EventTypes: []string{"attention.opened"}}); err != nil {
		return err
	}
	n := 200
	if e.cfg.Smoke {
		n = 20
	}
	h := newHist()
	for i := 0; i < n; i++ {
		it, err := s.admin.CreateItem(ctx, name, client.CreateItemRequest{Title: fmt.Sprintf("w10 item %d", i)})
		if err != nil {
			return err
		}
		body, _ := json.Marshal(map[string]string{"question": "Go ahead?"})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/v1/projects/"+name+"/items/"+it.ID+"/attention", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		res, err := s.http.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			return fmt.Errorf("POST attention: status %d", res.StatusCode)
		}
		select {
		case at := <-rc.arriv:
			h.add(at.Sub(start))
		case <-time.After(30 * time.Second):
			return fmt.Errorf("the receiver got no request within 30 s of hold %d", i)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	lat := h.summary()
	e.add(Result{Workload: 10, Name: "POST attention -> webhook hit", Ops: int64(n), Primary: "hit",
		Latency: map[string]Latency{"hit": lat}})
	e.logf("  POST attention -> webhook receiver: p50 %.1f ms, p99 %.1f ms (%d holds)", lat.P50Ms, lat.P99Ms, n)
	return nil
}

func w10Rate(ctx context.Context, e *env, s *benchServer) error {
	name := e.newProjectName("w10r")
	project, err := s.restProject(ctx, name)
	if err != nil {
		return err
	}
	rc := newReceiver()
	defer rc.Close()
	if _, err := s.admin.CreateWebhook(ctx, name, client.CreateWebhookRequest{URL: rc.URL, EventTypes: []string{"item.created"}}); err != nil {
		return err
	}
	n := e.cfg.PlanItems
	if e.cfg.Smoke {
		n = 500
	}
	plan := make([]graph.PlanItem, n)
	for i := range plan {
		plan[i] = graph.PlanItem{Key: fmt.Sprintf("r%d", i), Title: fmt.Sprintf("w10 item %d", i)}
	}
	if _, err := graph.NewService(e.pool, nil).ImportPlan(ctx, project, plan, benchPrincipal, false); err != nil {
		return err
	}
	start := time.Now()
	deadline := start.Add(10 * time.Minute)
	for {
		got, last := rc.count()
		if got >= n {
			secs := last.Sub(start).Seconds()
			rate := float64(got) / secs
			e.add(Result{Workload: 10, Name: "delivery rate, one replica", Size: int64(n), Ops: int64(got),
				Seconds: round(secs, 2), Rate: round(rate, 0), Unit: "deliveries/s"})
			e.logf("  one replica delivered %d events in %.2f s: %.0f deliveries/s", got, secs, rate)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("delivered %d of %d within 10 min", got, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
