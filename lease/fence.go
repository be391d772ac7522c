package lease

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// errFenced is what a fenced statement that matched no row returns inside
// the transaction: the lease is not (or no longer) the caller's. The
// transaction rolls back and refuse decides what to answer.
var errFenced = errors.New("lease: fence did not match")

// errBlocked is what a completion's ending statement returns when its
// fence held but its item waits for a dependency or an open child, added
// while the item was leased (WG007, db.ItemBlocked): the statement changed
// nothing and the lease is still live; blockedError says what is
// unfinished.
var errBlocked = errors.New("lease: the item waits for unfinished work")

// maxObservations is how many refused reports of each kind are kept per
// lease; the count goes on in lease_refusals.
const maxObservations = 20

// The operations a worker performs under a lease, as recorded in
// observations.
const (
	opHeartbeat = "heartbeat"
	opComplete  = "complete"
	opRelease   = "release"
	opFail      = "fail"
	opDecompose = "decompose"
	opAsk       = "ask"
)

// ending is how a worker's mutation ends its lease.
type ending struct {
	outcome    Outcome
	detail     json.RawMessage
	result     json.RawMessage
	workerTime *time.Time
	failed     bool
	// finish marks the item done with the result (a completion).
	finish bool
	// usage is the worker's final usage report (zero: none).
	usage Usage
	// abortIfLost makes a lost fence an error of the statement (WG003),
	// which aborts what is pipelined after it; endLease still answers
	// errFenced.
	abortIfLost bool
}

// ended is what endLease learned of the item.
type ended struct {
	failures int32
	parent   *uuid.UUID
	// item is the item row as the ending statement wrote it.
	item dbq.Item
}

// endLease ends the lease under the fence and frees its item, in one
// statement. The consecutive-expiry count of the item is reset: the worker
// came back. It returns the ended lease and the item's failure count and
// parent.
func (s *Service) endLease(ctx context.Context, q db.DBTX, project uuid.UUID, f Fence, e ending) (Lease, ended, error) {
	outcome := string(e.outcome)
	row, err := dbq.New().EndLease(ctx, q, dbq.EndLeaseParams{
		Now:           s.clock.Now(),
		Outcome:       &outcome,
		OutcomeDetail: e.detail,
		Result:        e.result,
		WorkerTime:    e.workerTime,
		ProjectID:     project,
		LeaseID:       f.LeaseID,
		Epoch:         f.Epoch,
		ResetExpiries: true,
		Failed:        e.failed,
		Finish:        e.finish,
		BackoffMs:     s.cfg.RetryBackoff.Milliseconds(),
		MaxBackoffMs:  s.cfg.MaxRetryBackoff.Milliseconds(),
		TokensIn:      e.usage.TokensIn,
		TokensOut:     e.usage.TokensOut,
		CostMicroUsd:  e.usage.costMicro(),
		ToolCalls:     e.usage.ToolCalls,
		AbortIfLost:   e.abortIfLost,
	})
	if errors.Is(err, pgx.ErrNoRows) || db.FenceLost(err) {
		return Lease{}, ended{}, errFenced
	}
	if db.ItemBlocked(err) {
		return Lease{}, ended{}, errBlocked
	}
	if err != nil {
		return Lease{}, ended{}, err
	}
	return fromEndRow(row), ended{failures: row.Item.Failures, parent: row.Item.ParentID, item: row.Item}, nil
}

// lockLease takes the lease's row lock under the fence, for mutations that
// write elsewhere before (or without) ending the lease.
func (s *Service) lockLease(ctx context.Context, tx pgx.Tx, project uuid.UUID, f Fence) (Lease, error) {
	row, err := dbq.New().LockLease(ctx, tx, dbq.LockLeaseParams{
		Now: s.clock.Now(), ProjectID: project, LeaseID: f.LeaseID, Epoch: f.Epoch,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, errFenced
	}
	if err != nil {
		return Lease{}, err
	}
	return fromRow(row, 0), nil
}

// refused answers a fenced mutation whose fence did not match, and records
// the call (a count always, an observation for the first few):
// not_found when there is no such lease in the project, lease_lost
// otherwise.
func (s *Service) refused(ctx context.Context, project uuid.UUID, f Fence, op string, workerTime *time.Time, payload any) error {
	var answer error
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		l, err := s.getLease(ctx, tx, project, f.LeaseID)
		if err != nil {
			return err
		}
		answer = lostError(l, f, s.clock.Now())
		return s.recordRefusal(ctx, tx, project, f, "stale_call", op, workerTime, mustJSON(payload))
	})
	if err != nil {
		return err
	}
	return answer
}

func (s *Service) recordRefusal(ctx context.Context, tx pgx.Tx, project uuid.UUID, f Fence, kind, op string, workerTime *time.Time, payload json.RawMessage) error {
	q := dbq.New()
	now := s.clock.Now()
	calls, err := q.CountRefusal(ctx, tx, dbq.CountRefusalParams{
		ProjectID: project, LeaseID: f.LeaseID, Kind: kind, Operation: op, Now: now,
		Epoch: f.Epoch, WorkerTime: workerTime, Payload: payload,
	})
	if err != nil || calls > maxObservations {
		return err
	}
	return q.InsertObservation(ctx, tx, dbq.InsertObservationParams{
		ProjectID: project, LeaseID: f.LeaseID, Epoch: f.Epoch, Kind: kind, Operation: op,
		Now: now, WorkerTime: workerTime, Payload: payload,
	})
}

// lostError says why the presented fence no longer holds.
func lostError(l Lease, f Fence, now *time.Time) error {
	e := &wgerr.Error{Code: wgerr.CodeLeaseLost, Details: map[string]any{"lease_id": l.ID, "epoch": f.Epoch}}
	switch {
	case l.Epoch != f.Epoch:
		e.Message = "lease " + l.ID.String() + " was not granted at this epoch"
	case l.Outcome != nil:
		e.Message = "lease " + l.ID.String() + " has ended (" + string(*l.Outcome) + ")"
		e.Details["outcome"] = string(*l.Outcome)
	case now != nil && !l.ExpiresAt.After(*now):
		e.Message = "lease " + l.ID.String() + " has expired"
	default:
		e.Message = "lease " + l.ID.String() + " has expired or is no longer held"
	}
	return e
}
