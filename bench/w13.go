package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/client"
)

// Workload 13: workgraph's batched REST path beside River (workload 12),
// on the same PostgreSQL in the same run: BatchJobs ready items loaded
// into a project (COPY, not timed), then batchAgents agents, each with its
// own token and the Go client, each loop claiming up to lease.MaxBatch
// items in one call (max_items) and completing them in one batch
// completion, until nothing is ready. Every item gets its own lease row
// in the history (checked at the end), with exactly one outcome, and its
// events. items/s from the first claim until every item is done, and the
// ratio to River's jobs/s in this run (ratio_to_river).

func init() {
	register(workload{id: 13, name: "batched REST claim + complete, history written (items/s vs River)", run: runW13})
}

// batchAgents is workload 13's agents: each holds up to client.MaxBatch
// leases at once.
const batchAgents = 16

// loadChunk is how many items workload 13 loads per COPY.
const loadChunk = 5_000

func runW13(ctx context.Context, e *env) error {
	n := e.cfg.BatchJobs
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	name := e.newProjectName("w13")
	project, err := s.restProject(ctx, name)
	if err != nil {
		return err
	}
	// In chunks, with statistics after the first: the ready trigger's
	// lookup of each new row is planned from them, and planned on an empty
	// table it scans every row the COPY has written so far.
	for left := n; left > 0; left -= min(left, loadChunk) {
		if err := copyItems(ctx, e.pool, project, min(left, loadChunk), func(i int, r *itemRow) { r.id = uuid.New() }); err != nil {
			return err
		}
		if err := analyze(ctx, e.pool); err != nil {
			return err
		}
	}
	agents := make([]*client.Client, batchAgents)
	for i := range agents {
		t, err := s.admin.CreateToken(ctx, name, client.CreateTokenRequest{Name: fmt.Sprintf("w13-agent-%d", i), Role: "agent"})
		if err != nil {
			return asHTTPError(err)
		}
		if agents[i], err = client.New(s.base, t.Secret, client.WithHTTPClient(s.http), client.WithRetries(1)); err != nil {
			return err
		}
	}
	var done, refused, calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, batchAgents)
	start := time.Now()
	cpu := e.cpu.window()
	for i, c := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("w13-%d", i)
			entries := make([]client.CompletionEntry, 0, client.MaxBatch)
			for ctx.Err() == nil {
				cs, err := c.ClaimBatch(ctx, name, client.ClaimRequest{Worker: worker}, client.MaxBatch)
				if errors.Is(err, client.ErrNothingReady) {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("claim: %w", asHTTPError(err))
					return
				}
				entries = entries[:0]
				for _, cl := range cs {
					entries = append(entries, client.CompletionEntry{LeaseID: cl.Lease.ID, Epoch: cl.Lease.Epoch})
				}
				answers, err := c.CompleteBatch(ctx, name, entries)
				if err != nil {
					errs <- fmt.Errorf("complete: %w", asHTTPError(err))
					return
				}
				calls.Add(2)
				for _, a := range answers {
					if a.Status == 200 {
						done.Add(1)
					} else {
						refused.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	cpu.stop()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	var leases, completed, open int
	err = e.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM leases WHERE project_id = $1),
		       (SELECT count(*) FROM leases WHERE project_id = $1 AND outcome = 'completed'),
		       (SELECT count(*) FROM items WHERE project_id = $1 AND status <> 'done')`, project).
		Scan(&leases, &completed, &open)
	if err != nil {
		return err
	}
	if int(done.Load()) != n || leases != n || completed != n || open != 0 {
		return fmt.Errorf("w13: %d completions answered, %d leases in the history (%d completed), %d items not done; want %d, %d, %d, 0",
			done.Load(), leases, completed, open, n, n, n)
	}
	rate := float64(n) / secs
	r := Result{Workload: 13, Name: "rest-batch", Agents: batchAgents, Size: int64(n), Seconds: round(secs, 3), Ops: int64(n),
		Rate: round(rate, 1), Unit: "items/s",
		Extra: map[string]float64{"calls": float64(calls.Load()), "refused": float64(refused.Load())},
		Note:  fmt.Sprintf("max_items=%d, batch completions, one history row per lease", client.MaxBatch)}
	cpu.addTo(&r)
	line := fmt.Sprintf("  workgraph batched REST: %d items in %.2fs = %.0f items/s (%d calls)", n, secs, rate, calls.Load())
	if w12 := find(e.rep, 12, "river", riverWorkers); w12 != nil && w12.Rate > 0 {
		r.Extra["ratio_to_river"] = round(rate/w12.Rate, 3)
		line += fmt.Sprintf(", %.3f of River's %.0f jobs/s", rate/w12.Rate, w12.Rate)
	}
	e.add(r)
	e.logf("%s", line)
	return nil
}
