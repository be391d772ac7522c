package lease

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
)

// Heartbeat renews a lease under its fence: expires_at = now + TTL (the
// database clock decides), with the worker's progress and clock reading
// (diagnostic). A lease past its expiry is never renewed, even if no one
// has ended it yet. The answer says whether a person asked the worker to
// stop and carries the closed non-blocking requests of this lease. Usage
// (monotonic, see Usage) is stored on the lease and charged to its worker
// and to the budgets over its item; when one of those budgets is spent the
// answer is stop (StopBudgetExhausted). A changed progress marker moves
// the lease's ProgressAt.
//
// Errors: invalid_argument (epoch, ttl, progress); not_found (no such
// lease); lease_lost.
func (s *Service) Heartbeat(ctx context.Context, project uuid.UUID, f Fence, hb Heartbeat) (HeartbeatResult, error) {
	if err := checkFence(f); err != nil {
		return HeartbeatResult{}, err
	}
	if hb.TTL != 0 {
		if err := s.cfg.checkTTL("ttl", hb.TTL); err != nil {
			return HeartbeatResult{}, err
		}
	}
	progress, err := optionalJSON("progress", hb.Progress)
	if err != nil {
		return HeartbeatResult{}, err
	}
	if err := hb.Usage.Check("usage"); err != nil {
		return HeartbeatResult{}, err
	}
	// One statement renews the lease under its fence (no transaction
	// around it: it is atomic alone) and says whether there are answers to
	// read after it.
	row, err := dbq.New().HeartbeatLease(ctx, s.exec, dbq.HeartbeatLeaseParams{
		Now:        s.clock.Now(),
		TtlMs:      hb.TTL.Milliseconds(),
		Progress:   progress,
		WorkerTime: hb.WorkerTime,
		ProjectID:  project,
		LeaseID:    f.LeaseID,
		Epoch:      f.Epoch,
		// Zero figures report nothing (the stored ones are larger or equal).
		TokensIn:     hb.Usage.TokensIn,
		TokensOut:    hb.Usage.TokensOut,
		CostMicroUsd: hb.Usage.costMicro(),
		ToolCalls:    hb.Usage.ToolCalls,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return HeartbeatResult{}, s.refused(ctx, project, f, opHeartbeat, hb.WorkerTime, map[string]any{"progress": progress})
	}
	if err != nil {
		return HeartbeatResult{}, db.Translate(err)
	}
	answers, older := []attention.Request{}, false
	if row.HasAnswers {
		if answers, older, err = s.attentionOn(s.exec).ClosedForLease(ctx, project, f.LeaseID); err != nil {
			return HeartbeatResult{}, err
		}
	}
	l := fromRow(row.Lease, 0)
	return s.heartbeatResult(ctx, project, l, answers, older)
}

// heartbeatResult is a renewal's answer: whether and why the worker should
// stop. A lease under a budget learns here that its subtree's budget is
// spent (and the first to find it opens the budget's request).
func (s *Service) heartbeatResult(ctx context.Context, project uuid.UUID, l Lease, answers []attention.Request, older bool) (HeartbeatResult, error) {
	out := HeartbeatResult{Lease: l, StopRequested: l.StopRequested, Answers: answers, OlderAnswers: older}
	if l.StopRequested {
		out.StopReason = StopByPerson
	}
	if len(l.BudgetRoots) > 0 {
		spent, err := s.checkBudgets(ctx, project, l.BudgetRoots)
		if err != nil {
			return HeartbeatResult{}, db.Translate(err)
		}
		if spent {
			out.StopRequested = true
			if out.StopReason == "" {
				out.StopReason = StopBudgetExhausted
			}
		}
	}
	return out, nil
}
