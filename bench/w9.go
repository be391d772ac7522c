package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Workload 9: history scale. One project per -history size (1,000,000 ended
// leases by default; 10,000,000 for the figure of docs/operations.md) and a
// baseline of historyBaseline leases (the same 8 workers and outcomes, so
// that every page has the same shape and size as in the large projects),
// each with the same small ready set (100 items). The
// ended leases are loaded with SQL (generate_series), through the same
// triggers as the server's own writes: done items of 10 attempts each (9
// released, failed or expired, the 10th completed), by 8 workers (bench-0 to
// bench-7, so the measuring agent's label is one of them), their
// acquisition times spread evenly over the 30 days before the load and
// their seq in time order. Measured, interleaved in rounds across the
// projects:
//   - claim+release on the lease service (one agent): "claim" latency;
//   - GET /v1/projects/{p}/workers (the workers page): "page" latency;
//   - GET /v1/projects/{p}/leases?since=<10 minutes ago> (the first page of
//     the recent history): "page" latency;
//   - GET /v1/projects/{p}/leases?outcome=cancelled (an outcome no loaded
//     lease has, so the page is empty: what an outcome filter costs when
//     few leases match): "page" latency.
// Each round of claim+release starts at a checkpoint (CHECKPOINT, where the
// role may run it), as a server's writes do every checkpoint_timeout: the
// first change of each page after a checkpoint writes the whole page to
// the WAL, so what a grant costs in a long history shows in its latency
// and its wal_bytes_per_op (a lease id index whose inserts land on random
// pages pays a page image at nearly every grant; migration 00166).
// Each result's p50_vs_baseline is its p50 over the same variant's on the
// baseline project. The claim+release loop adds a few thousand released
// leases to every project, the baseline included.

func init() {
	register(workload{id: 9, name: "history scale (claim and history pages vs ended leases)", run: runW9})
}

// historyAttempts is the number of leases of each loaded item, and
// historyWorkers the worker labels they are spread over.
const historyAttempts, historyWorkers = 10, 8

// historyBaseline is the history of the baseline project: one item per
// worker label, so that its workers page lists what the large ones do.
const historyBaseline = historyAttempts * historyWorkers

// historySpan is the time over which the loaded leases were acquired; the
// since page asks for the last historySince of it.
const (
	historySpan  = 30 * 24 * time.Hour
	historySince = 10 * time.Minute
)

func runW9(ctx context.Context, e *env) error {
	s, err := e.inProcessServer(ctx)
	if err != nil {
		return err
	}
	sizes := append([]int{historyBaseline}, e.cfg.History...)
	sort.Ints(sizes)
	ready := e.w4Ready()
	var vs []variant
	for _, size := range sizes {
		project, err := s.restProject(ctx, e.newProjectName("w9"))
		if err != nil {
			return err
		}
		if err := loadReady(ctx, e.pool, project, ready, 0); err != nil {
			return err
		}
		t := time.Now()
		if err := loadHistory(ctx, e.pool, project, size, e.logf); err != nil {
			return err
		}
		if err := analyze(ctx, e.pool); err != nil {
			return err
		}
		loadSeconds := round(time.Since(t).Seconds(), 1)
		e.logf("  %d ended leases loaded in %.1f s (with VACUUM ANALYZE)", size, loadSeconds)
		note := func(res *Result) {
			res.Extra["ready"] = float64(ready)
			res.Extra["load_seconds"] = loadSeconds
		}
		base := "/v1/projects/" + project.String()
		vs = append(vs,
			variant{workload: 9, name: "claim+release", workers: 1, size: int64(size), unit: "claims/s", primary: "claim",
				before: checkpoint(e), iter: claimRelease(serviceAgents(e, project, 1)), done: note},
			variant{workload: 9, name: "GET workers", workers: 1, size: int64(size), unit: "pages/s", primary: "page",
				iter: s.pageLoop(func() string { return base + "/workers" }), done: note},
			variant{workload: 9, name: "GET leases?since=", workers: 1, size: int64(size), unit: "pages/s", primary: "page",
				iter: s.pageLoop(func() string {
					return base + "/leases?" + url.Values{"since": {time.Now().Add(-historySince).UTC().Format(time.RFC3339Nano)}}.Encode()
				}), done: note},
			variant{workload: 9, name: "GET leases?outcome=cancelled", workers: 1, size: int64(size), unit: "pages/s", primary: "page",
				iter: s.pageLoop(func() string { return base + "/leases?outcome=cancelled" }), done: note},
		)
	}
	rs := e.interleave(ctx, vs)
	baseline := map[string]float64{}
	for _, r := range rs {
		if r.Size == historyBaseline {
			baseline[r.Name] = r.Latency[r.Primary].P50Ms
		}
	}
	for i := range rs {
		if p0 := baseline[rs[i].Name]; p0 > 0 {
			rs[i].Extra["p50_vs_baseline"] = round(rs[i].Latency[rs[i].Primary].P50Ms/p0, 2)
		}
		e.add(rs[i])
	}
	return nil
}

// checkpoint returns a variant's before step that runs a CHECKPOINT, or
// does nothing where the role may not (logged once).
func checkpoint(e *env) func(ctx context.Context) error {
	var refused atomic.Bool
	return func(ctx context.Context) error {
		if refused.Load() {
			return nil
		}
		if _, err := e.pool.Exec(ctx, "CHECKPOINT"); err != nil {
			refused.Store(true)
			e.logf("  W9: no CHECKPOINT before the claims (%v): they run wherever the server's checkpoints fall", err)
		}
		return nil
	}
}

// pageLoop returns an iteration that GETs the path made by path with the
// admin token and records its latency as "page".
func (s *benchServer) pageLoop(path func() string) func(ctx context.Context, w int, rec *recorder) error {
	return func(ctx context.Context, _ int, rec *recorder) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+s.token)
		t := time.Now()
		resp, err := s.http.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return &httpError{Status: resp.StatusCode}
		}
		rec.observe("page", t)
		rec.done()
		return nil
	}
}

// loadHistory adds n ended leases (rounded down to whole items of
// historyAttempts leases) to the project: done items, then their leases
// one attempt at a time (one statement of n/historyAttempts rows each), in
// acquisition order. The rows are inserted already ended, which the
// history triggers allow (they guard updates and deletes), and counted by
// the workers page's triggers as any ended lease is.
func loadHistory(ctx context.Context, pool *pgxpool.Pool, project uuid.UUID, n int, logf func(string, ...any)) error {
	items := n / historyAttempts
	if items == 0 {
		return nil
	}
	var start time.Time
	if err := pool.QueryRow(ctx, "SELECT now() - $1::bigint * interval '1 microsecond'", historySpan.Microseconds()).Scan(&start); err != nil {
		return err
	}
	step := historySpan / time.Duration(items*historyAttempts)
	if _, err := pool.Exec(ctx, `
		INSERT INTO items (project_id, title, status, epoch, result, created_by, created_at, updated_at, finished_at)
		SELECT $1, 'history item ' || g, 'done', $2, '{"ok": true}', $3, $4, $4, $4
		FROM generate_series(1, $5::int) AS g`,
		project, historyAttempts, benchPrincipal, start, items); err != nil {
		return fmt.Errorf("history items: %w", err)
	}
	for attempt := 1; attempt <= historyAttempts; attempt++ {
		t := time.Now()
		// The k-th loaded lease (attempt-major, so each item's attempts
		// follow each other in time) is acquired at start + k*step, holds
		// for 60 s with one heartbeat at 30 s.
		_, err := pool.Exec(ctx, `
			INSERT INTO leases (project_id, item_id, epoch, worker, principal, acquired_at, expires_at,
			                    heartbeat_at, heartbeats, ended_at, outcome, result)
			SELECT $1, i.id, $2, 'bench-' || (i.rank % $8), $3,
			       t.at, t.at + interval '15 minutes', t.at + interval '30 seconds', 1, t.at + interval '60 seconds',
			       CASE WHEN $2 = $4 THEN 'completed'
			            WHEN $2 % 3 = 0 THEN 'expired' WHEN $2 % 3 = 1 THEN 'released' ELSE 'failed' END,
			       CASE WHEN $2 = $4 THEN '{"ok": true}'::jsonb END
			FROM (SELECT id, row_number() OVER (ORDER BY seq) - 1 AS rank
			      FROM items WHERE project_id = $1 AND status = 'done' AND title LIKE 'history item %') AS i
			CROSS JOIN LATERAL (SELECT $5::timestamptz + (($2 - 1) * $6::bigint + i.rank) * $7::bigint * interval '1 microsecond' AS at) AS t
			ORDER BY t.at`,
			project, attempt, benchPrincipal, historyAttempts, start, items, max(step.Microseconds(), 1), historyWorkers)
		if err != nil {
			return fmt.Errorf("history leases, attempt %d: %w", attempt, err)
		}
		logf("    attempt %d of %d: %d ended leases in %.1f s", attempt, historyAttempts, items, time.Since(t).Seconds())
	}
	return nil
}
