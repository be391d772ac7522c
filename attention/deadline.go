package attention

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/startstop"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Deadline sweep batches.
const (
	deadlineProjects = 1000
	deadlineRequests = 500
)

// FireOverdue marks the project's open requests whose deadline has passed
// (by the database clock, or the stub clock) as overdue, writes one
// attention.overdue event for each and applies its policy, in one
// transaction: OverdueEscalate puts "escalate": true in the event;
// OverdueDefaultAnswer answers the request with its DefaultAnswer, by
// "system" (AnsweredByDefault), releasing its item as an answer does;
// OverdueRelease leaves the request open but no longer blocking, and the
// item, when it was its last blocking request, goes back to circulation
// for any worker. It returns the requests it marked. Each request is
// marked once, whatever the number of sweepers (rows are taken with FOR
// UPDATE SKIP LOCKED and overdue_at is checked on the locked row).
func (s *Service) FireOverdue(ctx context.Context, project uuid.UUID) ([]Request, error) {
	now := s.clock.Now()
	q := dbq.New()
	var out []Request
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := q.TakeOverdueAttention(ctx, tx, dbq.TakeOverdueAttentionParams{ProjectID: project, Now: now, MaxRows: deadlineRequests})
		if err != nil || len(rows) == 0 {
			return err
		}
		if err := events.SetActor(ctx, tx, events.SystemActor); err != nil {
			return err
		}
		for _, row := range rows {
			r := row.AttentionRequest
			if err := s.overdue(ctx, tx, now, r, row.WasBlocking); err != nil {
				return err
			}
			got, err := getRequest(ctx, tx, project, r.ID)
			if err != nil {
				return err
			}
			out = append(out, got)
		}
		return nil
	})
	return out, err
}

// overdue writes r's attention.overdue event and applies its policy.
func (s *Service) overdue(ctx context.Context, tx pgx.Tx, now nowArg, r dbq.AttentionRequest, wasBlocking bool) error {
	q := dbq.New()
	policy := ""
	if r.OnOverdue != nil {
		policy = *r.OnOverdue
	}
	payload := map[string]any{
		"attention_id": r.ID, "item_id": r.ItemID, "due_at": r.DueAt, "reason": r.Reason,
		"blocking": wasBlocking, "policy": policy, "escalate": policy == OverdueEscalate,
	}
	if _, err := events.Append(ctx, tx, events.New{
		Project: r.ProjectID, Type: events.AttentionOverdue, At: r.OverdueAt, Actor: events.SystemActor,
		ItemID: &r.ItemID, LeaseID: r.LeaseID, AttentionID: &r.ID, Payload: payload,
	}); err != nil {
		return err
	}
	switch policy {
	case OverdueDefaultAnswer:
		closed, err := q.AnswerByDefault(ctx, tx, dbq.AnswerByDefaultParams{ProjectID: r.ProjectID, ID: r.ID, Now: now})
		if err != nil {
			return db.Translate(err)
		}
		if closed.Blocking {
			_, err := q.ReleaseItemFromAttention(ctx, tx, dbq.ReleaseItemFromAttentionParams{
				ProjectID: r.ProjectID, ItemID: r.ItemID, Now: now, WindowMs: s.cfg.window().Milliseconds(),
			})
			return err
		}
	case OverdueRelease:
		if wasBlocking {
			return q.ReleaseItemFromOverdue(ctx, tx, dbq.ReleaseItemFromOverdueParams{ProjectID: r.ProjectID, ItemID: r.ItemID, Now: now})
		}
	}
	return nil
}

// DeadlineSweeper fires the deadlines of attention requests in the
// background (Service.FireOverdue for every project with a request past
// its deadline), every interval. Any number of sweepers, in one process or
// several replicas, may run at once: each request fires once.
type DeadlineSweeper struct {
	base     startstop.Base
	svc      *Service
	interval time.Duration
	log      *slog.Logger
	observe  func(policy string)
	// TestSignals are for tests: Init one before Start to wait on it.
	TestSignals DeadlineSignals
}

// Observe has f told of every deadline fired, with the request's policy
// ("" when it has none). Call it before Start.
func (w *DeadlineSweeper) Observe(f func(policy string)) { w.observe = f }

// DeadlineSignals are the test signals of a DeadlineSweeper.
type DeadlineSignals struct {
	// Fired is sent after every sweep with the number of requests it
	// marked overdue (also when the sweep failed).
	Fired startstop.Signal[int]
}

// NewDeadlineSweeper returns a DeadlineSweeper of svc's requests that
// sweeps every interval (0: 5 s).
func NewDeadlineSweeper(svc *Service, interval time.Duration, log *slog.Logger) *DeadlineSweeper {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &DeadlineSweeper{svc: svc, interval: interval, log: log}
}

// Start sweeps every interval until ctx ends or Stop.
func (w *DeadlineSweeper) Start(ctx context.Context) {
	w.base.Run(ctx, func(ctx context.Context) {
		startstop.Every(ctx, w.interval, false, func(ctx context.Context) {
			n, err := w.RunOnce(ctx)
			switch {
			case err != nil && ctx.Err() != nil:
			case err != nil && wgerr.RetryLater(wgerr.CodeOf(db.Translate(err))):
				// The database is away: the next sweep fires them.
				w.log.Warn("attention deadlines", "err", err)
			case err != nil:
				w.log.Error("attention deadlines", "err", err)
			case n > 0:
				w.log.Info("attention deadlines: requests overdue", "count", n)
			}
			w.TestSignals.Fired.Send(n)
		})
	})
}

// Stop stops the sweeper and waits for a sweep in progress.
func (w *DeadlineSweeper) Stop() { w.base.Stop() }

// observed tells the observer of the requests a sweep fired.
func (w *DeadlineSweeper) observed(rs []Request) {
	if w.observe == nil {
		return
	}
	for _, r := range rs {
		policy := ""
		if r.OnOverdue != nil {
			policy = *r.OnOverdue
		}
		w.observe(policy)
	}
}

// RunOnce fires every passed deadline once and returns how many requests
// it marked overdue.
func (w *DeadlineSweeper) RunOnce(ctx context.Context) (int, error) {
	projects, err := dbq.New().ProjectsWithOverdueAttention(ctx, w.svc.exec, dbq.ProjectsWithOverdueAttentionParams{
		Now: nowOf(w.svc.clock), MaxProjects: deadlineProjects,
	})
	if err != nil {
		return 0, db.Translate(err)
	}
	total := 0
	for _, p := range projects {
		rs, err := w.svc.FireOverdue(ctx, p)
		total += len(rs)
		if err != nil {
			return total, err
		}
		w.observed(rs)
	}
	return total, nil
}
