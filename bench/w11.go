package main

import (
	"context"
	"fmt"
	"time"

	"github.com/workgraph-dev/workgraph/client"
)

// Workload 11: question to stream. A worker asks a person (POST
// /v1/leases/{id}/attention, blocking) while a subscriber follows the
// project's event stream (GET .../events/stream, types=attention.opened)
// through the Go client; the time from sending the ask to the subscriber
// receiving its attention.opened event, one question at a time.

func init() {
	register(workload{id: 11, name: "question to event stream (attention.opened latency)", run: runW11})
}

func runW11(ctx context.Context, e *env) error {
	questions := 200
	if e.cfg.Smoke {
		questions = 5
	}
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	name := e.newProjectName("w11")
	if _, err := s.restProject(ctx, name); err != nil {
		return err
	}
	tk, err := s.admin.CreateToken(ctx, name, client.CreateTokenRequest{Name: "w11-agent", Role: "agent"})
	if err != nil {
		return asHTTPError(err)
	}
	agent, err := client.New(s.base, tk.Secret, client.WithHTTPClient(s.http))
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan string, questions)
	go func() {
		for ev, err := range s.admin.Stream(sctx, name, client.EventsQuery{Types: []string{"attention.opened"}}) {
			if err != nil {
				return
			}
			if ev.AttentionID != nil {
				got <- *ev.AttentionID
			}
		}
	}()
	h := newHist()
	for i := 0; i < questions; i++ {
		if _, err := agent.CreateItem(ctx, name, client.CreateItemRequest{Title: fmt.Sprintf("q%d", i)}); err != nil {
			return asHTTPError(err)
		}
		cl, err := agent.Claim(ctx, name, client.ClaimRequest{Worker: "w11"})
		if err != nil {
			return asHTTPError(err)
		}
		t := time.Now()
		res, err := agent.Ask(ctx, cl.Lease.ID, client.AskRequest{Epoch: cl.Lease.Epoch, Question: "which one?"})
		if err != nil {
			return asHTTPError(err)
		}
		want := res.Attention.ID
		for {
			select {
			case id := <-got:
				if id != want {
					continue
				}
			case <-time.After(30 * time.Second):
				return fmt.Errorf("w11: no attention.opened for %s on the stream within 30 s", want)
			}
			break
		}
		h.add(time.Since(t))
	}
	lat := h.summary()
	e.add(Result{Workload: 11, Name: "ask -> SSE attention.opened", Ops: int64(h.n), Primary: "ask_to_event",
		Latency: map[string]Latency{"ask_to_event": lat}})
	e.logf("  ask -> SSE attention.opened: %d questions, p50 %.1f ms, p99 %.1f ms", h.n, lat.P50Ms, lat.P99Ms)
	return nil
}
