package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
)

// Liveness is how alive a live lease looks, by the database clock.
type Liveness string

// The liveness of a live lease.
const (
	// LivenessHealthy: heartbeating, and its progress changed within the
	// project's quiet window.
	LivenessHealthy Liveness = "healthy"
	// LivenessQuiet: heartbeating, but its progress has not changed for
	// the project's quiet window (a worker in a loop, or wedged).
	LivenessQuiet Liveness = "quiet"
	// LivenessStale: past its expiry, or silent for more than half its
	// TTL (a worker that stopped heartbeating).
	LivenessStale Liveness = "stale"
)

// Activity is a live lease with its liveness and its last activity (the
// last change of its progress, else its claim).
type Activity struct {
	LeaseID      uuid.UUID
	ItemID       uuid.UUID
	Worker       string
	Epoch        int64
	AcquiredAt   time.Time
	HeartbeatAt  *time.Time
	ExpiresAt    time.Time
	Progress     json.RawMessage
	LastActivity time.Time
	Liveness     Liveness
	Usage        Usage
}

// Activity lists the project's live leases, oldest first, each with its
// liveness judged by the database clock.
func (s *Service) Activity(ctx context.Context, project uuid.UUID) ([]Activity, error) {
	rows, err := dbq.New().LiveLeaseActivity(ctx, s.exec, dbq.LiveLeaseActivityParams{ProjectID: project, Now: s.clock.Now()})
	if err != nil {
		return nil, db.Translate(err)
	}
	out := make([]Activity, len(rows))
	for i, r := range rows {
		out[i] = Activity{
			LeaseID: r.ID, ItemID: r.ItemID, Worker: r.Worker, Epoch: r.Epoch, AcquiredAt: r.AcquiredAt,
			HeartbeatAt: r.HeartbeatAt, ExpiresAt: r.ExpiresAt, Progress: r.Progress,
			LastActivity: r.LastActivity, Liveness: Liveness(r.Liveness),
			Usage: usageOf(r.TokensIn, r.TokensOut, r.CostMicroUsd, r.ToolCalls),
		}
	}
	return out, nil
}

// EndNoProgress ends up to limit (0: 1000) live leases of the project whose
// progress has not changed for the project's no_progress_after (a project
// without that policy has none), in one transaction: each gets a blocking
// system attention request of reason no_progress on its item and ends as
// attention_requested, like a blocking ask. The worker is not preferred
// when the item is handed out again (it was not getting anywhere). Leases
// another transaction holds are skipped. It returns how many it ended.
func (s *Service) EndNoProgress(ctx context.Context, project uuid.UUID, limit int) (int, error) {
	if limit <= 0 {
		limit = 1000
	}
	n := 0
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		n = 0
		rows, err := dbq.New().LockNoProgressLeases(ctx, tx, dbq.LockNoProgressLeasesParams{
			ProjectID: project, Now: s.clock.Now(), MaxLeases: int32(limit),
		})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := s.endQuiet(ctx, tx, project, r); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

func (s *Service) endQuiet(ctx context.Context, tx pgx.Tx, project uuid.UUID, r dbq.LockNoProgressLeasesRow) error {
	leaseID, epoch := r.ID, r.Epoch
	last := r.AcquiredAt
	if r.ProgressAt != nil {
		last = *r.ProgressAt
	}
	window := time.Duration(r.NoProgressAfterMs) * time.Millisecond
	progress := json.RawMessage(r.Progress)
	if len(progress) == 0 {
		progress = json.RawMessage("null")
	}
	req, err := s.attentionOn(tx).Open(ctx, project, r.ItemID, attention.NewRequest{
		Question: fmt.Sprintf("The lease of worker %q (epoch %d) kept heartbeating (%d heartbeats) but its progress "+
			"has not changed since %s, longer than the project's no-progress window (%s); it was ended. "+
			"Resolve to hand the item out again, or cancel it.",
			r.Worker, r.Epoch, r.Heartbeats, last.UTC().Format(time.RFC3339), window),
		Context: mustJSON(map[string]any{"attempt": map[string]any{
			"lease_id":      r.ID,
			"worker":        r.Worker,
			"epoch":         r.Epoch,
			"heartbeats":    r.Heartbeats,
			"progress":      progress,
			"last_activity": last,
		}}),
		Blocking:    true,
		Source:      attention.SourceSystem,
		Reason:      attention.ReasonNoProgress,
		RequestedBy: "system",
		LeaseID:     &leaseID,
		Epoch:       &epoch,
	})
	if err != nil {
		return err
	}
	_, _, err = s.endLease(ctx, tx, project, Fence{LeaseID: r.ID, Epoch: r.Epoch}, ending{
		outcome: OutcomeAttentionRequested,
		detail:  mustJSON(map[string]any{"attention_request_id": req.ID, "reason": attention.ReasonNoProgress}),
	})
	return err
}
