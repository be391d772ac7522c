package lease

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/startstop"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Sweep batches.
const (
	sweepProjects = 1000
	sweepLeases   = 1000
	// sweepBackoffs bounds the items whose backoff has passed that one
	// sweep returns to the claim indexes in each project; the rest wait
	// for the next one (claims find them meanwhile, see ClearDueBackoffs).
	sweepBackoffs = 10000
	// sweepScopeHolds bounds the marked items (scope_held) whose marks one
	// sweep re-judges in each project.
	sweepScopeHolds = 10000
)

// Sweeper ends expired leases in the background, so that an item whose
// worker vanished returns to circulation (or gets its repeated-expiry
// attention request) even when no one claims in its project. Each project
// is swept in its own transaction (ReapExpired); any number of sweepers,
// in one process or several replicas, may run at once: leases are taken
// with FOR UPDATE SKIP LOCKED and each is ended once.
type Sweeper struct {
	base     startstop.Base
	svc      *Service
	interval time.Duration
	log      *slog.Logger
	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals SweeperSignals
	observe     func(reaped int, err error)
}

// SweeperSignals are the test signals of a Sweeper.
type SweeperSignals struct {
	// Swept is sent after every sweep of the loop with the number of
	// leases it ended (also when the sweep failed).
	Swept startstop.Signal[int]
}

// Observe has f told of every background sweep: how many leases it ended
// and its error (for metrics). Call it before Start.
func (w *Sweeper) Observe(f func(reaped int, err error)) { w.observe = f }

// NewSweeper returns a Sweeper that sweeps every interval (0: 10s).
func NewSweeper(svc *Service, interval time.Duration, log *slog.Logger) *Sweeper {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &Sweeper{svc: svc, interval: interval, log: log}
}

// Start sweeps every interval in the background until ctx ends or Stop.
func (w *Sweeper) Start(ctx context.Context) {
	w.base.Run(ctx, func(ctx context.Context) {
		startstop.Every(ctx, w.interval, false, w.sweep)
	})
}

// Stop stops the sweeper and waits for a sweep in progress to finish.
func (w *Sweeper) Stop() { w.base.Stop() }

func (w *Sweeper) sweep(ctx context.Context) {
	n, err := w.RunOnce(ctx)
	if w.observe != nil && ctx.Err() == nil {
		w.observe(n, err)
	}
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil && wgerr.RetryLater(wgerr.CodeOf(db.Translate(err))):
		// The database is away (a restart, a failover): the pool
		// reconnects by itself and the next sweep ends what is due.
		w.log.Warn("lease sweeper", "err", db.Translate(err), "cause", err)
	case err != nil:
		w.log.Error("lease sweeper", "err", err)
	case n > 0:
		w.log.Info("lease sweeper: expired leases ended", "count", n)
	}
	w.TestSignals.Swept.Send(n)
}

// RunOnce sweeps every project that has expired leases once, then every
// project whose no_progress policy a live lease has passed (EndNoProgress),
// then opens the request of every spent budget that has none
// (AskSpentBudgets), then returns up to sweepBackoffs items whose retry
// backoff has passed to the claim indexes (ClearDueBackoffs) and up to
// sweepScopeHolds items that no live lease holds any more
// (ClearStaleScopeHolds), and returns how many leases it ended. Tests call
// it instead of waiting for the ticker.
func (w *Sweeper) RunOnce(ctx context.Context) (int, error) {
	total, err := w.endLeases(ctx)
	if err != nil {
		return total, err
	}
	if err := w.svc.ClearDueBackoffs(ctx, sweepBackoffs); err != nil {
		return total, err
	}
	_, err = w.svc.ClearStaleScopeHolds(ctx, sweepScopeHolds)
	return total, err
}

// endLeases ends expired and no-progress leases and asks for spent
// budgets (RunOnce's first part).
func (w *Sweeper) endLeases(ctx context.Context) (int, error) {
	q := dbq.New()
	total, err := eachProject(ctx,
		func() ([]uuid.UUID, error) {
			return q.ProjectsWithExpiredLeases(ctx, w.svc.exec, dbq.ProjectsWithExpiredLeasesParams{
				Now: w.svc.clock.Now(), MaxProjects: sweepProjects,
			})
		},
		func(p uuid.UUID) (int, error) { return w.svc.ReapExpired(ctx, p, sweepLeases) })
	if err != nil {
		return total, err
	}
	quiet, err := eachProject(ctx,
		func() ([]uuid.UUID, error) {
			return q.ProjectsWithNoProgress(ctx, w.svc.exec, dbq.ProjectsWithNoProgressParams{
				Now: w.svc.clock.Now(), MaxProjects: sweepProjects,
			})
		},
		func(p uuid.UUID) (int, error) { return w.svc.EndNoProgress(ctx, p, sweepLeases) })
	total += quiet
	if err != nil {
		return total, err
	}
	return total, w.svc.AskSpentBudgets(ctx, sweepLeases)
}

// eachProject is the shape of every sweeper step: list the projects
// that have something due (one statement over a partial index), then
// do the step in each, one transaction per project, so that every
// transaction stays inside its project. It returns the sum of what the
// steps counted and stops at the first error.
func eachProject(ctx context.Context, projects func() ([]uuid.UUID, error), step func(uuid.UUID) (int, error)) (int, error) {
	ps, err := projects()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, p := range ps {
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
		n, err := step(p)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// ClearDueBackoffs returns ready items whose retry backoff has passed (by
// the service's clock, else the database's) from items_backoff to the
// claim indexes, up to limit of them in each of up to sweepProjects
// projects, one transaction per project. Claims take such an item at its
// priority before this runs: it only keeps the part of items_backoff that
// every claim reads short (docs/adr/0007-lean-hot-path.md, "Addendum:
// claims past retry backoffs").
func (s *Service) ClearDueBackoffs(ctx context.Context, limit int) error {
	q := dbq.New()
	_, err := eachProject(ctx,
		func() ([]uuid.UUID, error) {
			return q.ProjectsWithDueBackoffs(ctx, s.exec, dbq.ProjectsWithDueBackoffsParams{
				Now: s.clock.Now(), MaxProjects: sweepProjects,
			})
		},
		func(p uuid.UUID) (int, error) {
			n, err := q.ClearDueBackoffs(ctx, s.exec, dbq.ClearDueBackoffsParams{
				ProjectID: p, Now: s.clock.Now(), MaxItems: int32(limit),
			})
			return int(n), err
		})
	return err
}

// ClearStaleScopeHolds returns to the claim indexes the items marked as
// held by a live lease's write scopes (items.scope_held) that no live
// lease overlaps, up to limit of them in each of up to sweepProjects
// projects, one statement per project, and returns how many it returned.
// The end of a lease clears the items it held
// (leases_release_scoped_items); this re-judges the marks so that one no
// end cleared hides its item no longer than a sweep
// (docs/adr/0007-lean-hot-path.md, "Addendum: claims past held write
// scopes").
func (s *Service) ClearStaleScopeHolds(ctx context.Context, limit int) (int, error) {
	q := dbq.New()
	return eachProject(ctx,
		func() ([]uuid.UUID, error) { return q.ProjectsWithScopeHolds(ctx, s.exec, sweepProjects) },
		func(p uuid.UUID) (int, error) {
			n, err := q.ClearStaleScopeHolds(ctx, s.exec, dbq.ClearStaleScopeHoldsParams{
				ProjectID: p, MaxItems: int32(limit),
			})
			return int(n), err
		})
}
