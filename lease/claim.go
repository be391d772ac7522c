package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/input"
	"github.com/workgraph-dev/workgraph/telemetry"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// reapBatch bounds how many expired leases one claim ends before it looks
// for an item; the sweeper ends the rest.
const reapBatch = 100

// Claim grants the highest-priority ready item of the project to the
// worker: it takes an item through the claim index with FOR UPDATE SKIP
// LOCKED, increments its epoch and records the lease. The item must carry
// every requested label, be past its retry backoff, and not be reserved for
// another worker by the continuity window.
//
// The common case is one statement with no transaction around it
// (ClaimItemDirect: the lease, the item and whether it has an attention
// history in one answer); a claim that finds nothing to hand out costs one
// more read (ClaimNeedsTx). When that statement finds a lease of the
// project past its expiry and not yet ended, or a token near its live-lease
// limit, the claim runs as one transaction instead: it first
// ends the project's expired leases (see ReapExpired), serialises and
// counts the token's claims near its limit, then claims.
//
// Capabilities and write scopes: the item's requires must be among the
// request's capabilities, and its touches must not overlap a scope a live
// lease holds (see "Scope locks" in scopes.go; both paths grant scopes,
// and a claim that loses a scope's race to a concurrent one claims again). When
// nothing can be handed out and the project has ready items, none of which
// the capabilities cover, the answer is no_match rather than
// ErrNothingReady: waiting would not help.
//
// Errors: ErrNothingReady; no_match (details: capabilities, missing);
// invalid_argument (worker, ttl, labels, capabilities); rate_limited when
// the token already holds MaxActivePerToken live leases.
func (s *Service) Claim(ctx context.Context, project uuid.UUID, req ClaimRequest) (Claim, error) {
	req, ttl, err := s.cleanClaim(req)
	if err != nil {
		return Claim{}, err
	}
	if err := s.recordOffer(ctx, s.exec, project, req); err != nil {
		return Claim{}, err
	}
	for attempt := 1; ; attempt++ {
		out, err := s.claimOnce(ctx, project, req, ttl)
		if !errors.Is(err, errScopeRace) {
			return out, err
		}
		if attempt == maxScopeRetries {
			// Claims keep racing for these scopes: answer as if nothing
			// were ready; the worker's next claim tries again.
			return Claim{}, ErrNothingReady
		}
	}
}

// claimOnce is one attempt of Claim: the one statement, then, when it
// claimed nothing and a guard says so, the transactional path. Errors as
// Claim's, and errScopeRace.
func (s *Service) claimOnce(ctx context.Context, project uuid.UUID, req ClaimRequest, ttl time.Duration) (Claim, error) {
	var out Claim
	ok, next := false, decideInTx
	direct := func(exec db.Executor) (err error) {
		out, ok, next, err = s.claimDirect(ctx, exec, exec, project, req, ttl)
		return err
	}
	var err error
	carried, canCarry := db.CarriedCommitFrom(ctx)
	b, batcher := s.exec.(db.Batcher)
	if _, inTx := s.exec.(pgx.Tx); inTx {
		batcher = false
	}
	if db.HasBeforeCommit(ctx) && canCarry && batcher {
		// The hook rides in the claiming statement's batch (its
		// Idempotency-Key record marked in the same implicit
		// transaction): one round trip, no transaction around it.
		err = db.TraceBatch(ctx, func() (err error) {
			out, ok, next, err = s.claimDirect(ctx, s.exec, db.Followed(b, s.exec, carried.Then), project, req, ttl)
			return err
		})
		if err == nil && ok && carried.Marked != nil {
			carried.Marked()
		}
	} else if db.HasBeforeCommit(ctx) {
		// A request's hook (its Idempotency-Key record) fences the claim's
		// write: the one statement runs in a transaction that runs it.
		err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error { return direct(tx) })
	} else {
		// On the pool directly (a savepoint inside a caller's transaction,
		// so that a failed statement leaves it usable); db.Atomic hands
		// fn the pool or that transaction, each an Executor.
		err = db.Atomic(ctx, s.exec, func(q db.DBTX) error { return direct(q.(db.Executor)) })
	}
	if err != nil || ok {
		return out, err
	}
	if next == nothingReady {
		return Claim{}, ErrNothingReady
	}
	return s.claimInTx(ctx, project, req, ttl, next == noneMatches)
}

// afterDirect is what the one-statement claim learned when it claimed
// nothing.
type afterDirect int

const (
	// decideInTx: a guard held the claim back, or an item the claim could
	// take is ready after all; the transactional path decides.
	decideInTx afterDirect = iota
	// nothingReady: there was simply nothing to claim.
	nothingReady
	// noneMatches: ready items exist and the claim's capabilities cover
	// none of them; the transactional path answers no_match with its
	// details, unless that changed in the meantime.
	noneMatches
)

// newLeaseID is a new lease's id: a UUID version 7 (RFC 9562), which begins
// with the Unix time in milliseconds, so that each grant's insert lands on
// the right-hand page of the lease id indexes instead of a random page of
// a history that only grows (each such page first changed after a
// checkpoint is a full page in the WAL; migration 00166, where wg_uuid_v7
// makes the batch claim's ids the same way). The time in it is this
// process's and is never read back: nothing is ordered or decided by a
// lease id.
func newLeaseID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

// claimDirect is the claim's one-statement path; ok is false when the
// statement claimed nothing, and next then says why (ClaimNeedsTx): there
// was simply nothing to claim, or the transactional path must decide (a
// guard, or a no_match answer with its details). errScopeRace: the
// statement took an item whose scope a concurrent claim granted first, and
// wrote nothing.
//
// The claiming statement goes to claimOn (exec, or a db.Followed batch on
// it); every other statement to exec.
func (s *Service) claimDirect(ctx context.Context, exec db.Executor, claimOn db.DBTX, project uuid.UUID, req ClaimRequest, ttl time.Duration) (out Claim, ok bool, next afterDirect, err error) {
	quiet := 0
	if s.cfg.MaxActivePerToken > 0 && req.TokenID != nil {
		if quiet = s.cfg.MaxActivePerToken - tokenLockSlack; quiet <= 0 {
			return Claim{}, false, decideInTx, nil // always near the limit: count under the lock
		}
	}
	now := s.clock.Now()
	// Prepared as every statement (not db.CustomPlan): its candidate search
	// is wg_claim_candidate, whose plan does not depend on the parameters,
	// so the session's generic plan is the right one and the statement is
	// not planned again at every claim.
	row, err := dbq.New().ClaimItemDirect(ctx, claimOn, dbq.ClaimItemDirectParams{
		LeaseID:      newLeaseID(),
		Worker:       req.Worker,
		TokenID:      req.TokenID,
		Principal:    req.Principal,
		Now:          now,
		TtlMs:        ttl.Milliseconds(),
		ProjectID:    project,
		Labels:       req.Labels,
		TokenQuiet:   int32(quiet),
		Capabilities: req.Capabilities,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// Claimed nothing: one more read tells an empty project (the
		// answer, without the transaction's four round trips) from a guard.
		probe, err := dbq.New().ClaimNeedsTx(ctx, exec, dbq.ClaimNeedsTxParams{
			ProjectID: project, Now: now, TokenQuiet: int32(quiet), TokenID: req.TokenID,
			Capabilities: req.Capabilities, Labels: req.Labels, Worker: req.Worker,
		})
		if err != nil {
			return Claim{}, false, decideInTx, db.Translate(err)
		}
		switch {
		case probe.Missed:
			// An item the claim could take is ready after all (the
			// search's later snapshot found one the statement's UPDATE
			// could not see, or a claim in flight holds it): the
			// transaction decides with one snapshot.
			return Claim{}, false, decideInTx, nil
		case probe.NeedsTx:
			return Claim{}, false, decideInTx, nil
		case probe.Hopeless:
			// noMatch reads it again, with the details: rare, and never on
			// the way to a grant.
			return Claim{}, false, noneMatches, nil
		}
		return Claim{}, false, nothingReady, nil
	}
	if db.ScopeRace(err) {
		return Claim{}, false, decideInTx, errScopeRace
	}
	if err != nil {
		return Claim{}, false, decideInTx, db.Translate(err)
	}
	out = Claim{Lease: fromRow(row.Lease, 0), Item: graph.ClaimedItem(row.Item, row.DbNow)}
	if err := s.withHistory(ctx, exec, project, &out, row.HasAttention); err != nil {
		return Claim{}, false, decideInTx, err
	}
	telemetry.Tag(ctx, telemetry.Tags{Item: out.Item.ID, Lease: out.Lease.ID, Epoch: out.Lease.Epoch})
	return out, true, decideInTx, nil
}

// claimInTx is the claim's transactional path: reap, count the token's
// leases near its limit, claim. hopeless: the one-statement path found that
// the claim's capabilities cover no ready item; the transaction asks that
// again first (ClaimHopeless reads each distinct requires once) and
// answers no_match without searching when it still holds, since the
// search would read every ready item it cannot take.
func (s *Service) claimInTx(ctx context.Context, project uuid.UUID, req ClaimRequest, ttl time.Duration, hopeless bool) (Claim, error) {
	now := s.clock.Now()
	q := dbq.New()
	var out Claim
	nothing := false
	var noMatch *wgerr.Error
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) (err error) {
		nothing, noMatch = false, nil
		if _, err := s.reapExpired(ctx, tx, project, reapBatch); err != nil {
			return err
		}
		if err := s.checkTokenLimit(ctx, tx, req.TokenID); err != nil {
			return err
		}
		if hopeless {
			if noMatch, err = s.noMatch(ctx, tx, project, req.Capabilities, req.Labels); err != nil || noMatch != nil {
				nothing = true
				return err
			}
		}
		row, err := q.ClaimItem(ctx, db.CustomPlan(tx), dbq.ClaimItemParams{
			LeaseID:      newLeaseID(),
			Worker:       req.Worker,
			TokenID:      req.TokenID,
			Principal:    req.Principal,
			Now:          now,
			TtlMs:        ttl.Milliseconds(),
			ProjectID:    project,
			Labels:       req.Labels,
			Capabilities: req.Capabilities,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			// Commit what the reaping did; there is nothing to hand out.
			nothing = true
			noMatch, err = s.noMatch(ctx, tx, project, req.Capabilities, req.Labels)
			return err
		}
		if db.ScopeRace(err) {
			return errScopeRace
		}
		if err != nil {
			return err
		}
		item, err := s.graphOn(tx).Item(ctx, project, row.Lease.ItemID)
		if err != nil {
			return err
		}
		out = Claim{Lease: fromRow(row.Lease, 0), Item: item}
		if err := s.withHistory(ctx, tx, project, &out, row.HasAttention); err != nil {
			return err
		}
		// A traced claim's request and transaction spans name what it got.
		telemetry.Tag(ctx, telemetry.Tags{Item: item.ID, Lease: out.Lease.ID, Epoch: out.Lease.Epoch})
		return nil
	})
	if err != nil {
		return Claim{}, err
	}
	if noMatch != nil {
		return Claim{}, noMatch
	}
	if nothing {
		return Claim{}, ErrNothingReady
	}
	return out, nil
}

// withHistory sets a claim's attention history: the latest ClaimHistory
// requests of its item, read on exec (one statement, none when the claiming
// statement found that the item has none: has).
func (s *Service) withHistory(ctx context.Context, exec db.Executor, project uuid.UUID, c *Claim, has bool) error {
	c.Attention = []attention.Request{}
	if !has {
		return nil
	}
	h, err := s.attentionOn(exec).Latest(ctx, project, c.Lease.ItemID, "", ClaimHistory)
	if err != nil {
		return db.Translate(err)
	}
	c.Attention, c.OlderAttention = h.Requests, h.Older != ""
	return nil
}

func (s *Service) cleanClaim(req ClaimRequest) (ClaimRequest, time.Duration, error) {
	req.Worker = strings.TrimSpace(req.Worker)
	if req.Worker == "" || len(req.Worker) > maxWorkerBytes {
		return req, 0, wgerr.InvalidField("worker", "must be 1 to %d bytes", maxWorkerBytes)
	}
	if err := input.Line("worker", req.Worker); err != nil {
		// History, the pages and the logs show it.
		return req, 0, err
	}
	ttl := req.TTL
	if ttl == 0 {
		ttl = s.cfg.DefaultTTL
	}
	if err := s.cfg.checkTTL("ttl", ttl); err != nil {
		return req, 0, err
	}
	labels, err := graph.CleanLabels("labels", req.Labels)
	if err != nil {
		return req, 0, err
	}
	req.Labels = labels
	if req.Capabilities, err = graph.CleanLabels("capabilities", req.Capabilities); err != nil {
		return req, 0, err
	}
	req.Principal = strings.TrimSpace(req.Principal)
	if req.Principal == "" {
		req.Principal = req.Worker
	}
	return req, ttl, nil
}

// tokenLockSlack is how far below its limit a token's live leases must be
// for a claim to skip the token lock.
const tokenLockSlack = 64

// checkTokenLimit refuses a claim when the token already holds its share
// of live leases. Far below the limit the claim only counts; within
// tokenLockSlack of it, the token's claims are serialised by an advisory
// lock held to the end of the transaction and count again, so concurrent
// claims cannot overshoot (unless more than tokenLockSlack claims of one
// token start together while it is still far below). Far from the limit a
// fleet of agents sharing one token never waits on the lock, which would
// otherwise serialise their claims through each commit's WAL flush.
func (s *Service) checkTokenLimit(ctx context.Context, tx pgx.Tx, token *uuid.UUID) error {
	if s.cfg.MaxActivePerToken <= 0 || token == nil {
		return nil
	}
	q := dbq.New()
	count := func() (int, error) {
		n, err := q.CountActiveForToken(ctx, tx, dbq.CountActiveForTokenParams{TokenID: token, Now: s.clock.Now()})
		return int(n), err
	}
	n, err := count()
	if err != nil {
		return err
	}
	if n+tokenLockSlack < s.cfg.MaxActivePerToken {
		return nil
	}
	if err := q.LockToken(ctx, tx, *token); err != nil {
		return err
	}
	if n, err = count(); err != nil {
		return err
	}
	if n >= s.cfg.MaxActivePerToken {
		return wgerr.New(wgerr.CodeRateLimited, "this token already holds %d live leases (the limit); finish one first", n)
	}
	return nil
}

// holdUncertain holds the item of an expired lease whose on_expiry is
// "reconcile" for a person: a blocking system request of reason
// uncertain_outcome naming the attempt (worker, epoch, last heartbeat and
// progress, as the database received them; the worker's own clock only as
// a diagnostic), which may still be running or may have applied its effect.
func (s *Service) holdUncertain(ctx context.Context, tx pgx.Tx, project uuid.UUID, e dbq.ExpireLeasesRow) error {
	leaseID, epoch := e.LeaseID, e.Epoch
	heard := "it never sent a heartbeat"
	if e.HeartbeatAt != nil {
		heard = fmt.Sprintf("its last heartbeat (of %d) was received at %s", e.Heartbeats, e.HeartbeatAt.UTC().Format(time.RFC3339))
	}
	progress := json.RawMessage(e.Progress)
	if len(progress) == 0 {
		progress = json.RawMessage("null")
	}
	_, err := s.attentionOn(tx).Open(ctx, project, e.ItemID, attention.NewRequest{
		Question: fmt.Sprintf("The lease of worker %q (epoch %d) expired at %s; %s. That attempt may still be "+
			"running or may already have applied its effect. Decide: retry (hand the item out again), "+
			"done (with the result) or cancel.",
			e.Worker, e.Epoch, e.ExpiresAt.UTC().Format(time.RFC3339), heard),
		SuggestedAnswers: []string{string(attention.DecisionRetry), string(attention.DecisionDone), string(attention.DecisionCancel)},
		Context: mustJSON(map[string]any{"attempt": map[string]any{
			"lease_id":          e.LeaseID,
			"worker":            e.Worker,
			"epoch":             e.Epoch,
			"acquired_at":       e.AcquiredAt,
			"expires_at":        e.ExpiresAt,
			"last_heartbeat_at": e.HeartbeatAt,
			"heartbeats":        e.Heartbeats,
			"progress":          progress,
			"worker_time":       e.WorkerTime,
		}}),
		Blocking:    true,
		Source:      attention.SourceSystem,
		Reason:      attention.ReasonUncertainOutcome,
		RequestedBy: "system",
		LeaseID:     &leaseID,
		Epoch:       &epoch,
	})
	if err != nil {
		return err
	}
	return dbq.New().ResetExpiries(ctx, tx, dbq.ResetExpiriesParams{ProjectID: project, ItemID: e.ItemID})
}

// ReapExpired ends up to limit (0: 1000) expired leases of the project as
// "expired", in one transaction, and returns how many it ended. Their items
// return to circulation, except an item whose on_expiry (its own, else its
// project's) is "reconcile": it waits for a person's decision in a blocking
// system request of reason uncertain_outcome (see attention.Decide); and an
// item whose leases expired MaxExpiries times in a row: it gets a blocking
// system attention request (reason repeated_expiry) instead, so a task that
// kills its workers is not handed out forever. Leases that another transaction holds are skipped, so
// several sweepers (and claims) may run at once.
func (s *Service) ReapExpired(ctx context.Context, project uuid.UUID, limit int) (int, error) {
	if limit <= 0 {
		limit = 1000
	}
	var n int
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		var err error
		n, err = s.reapExpired(ctx, tx, project, limit)
		return err
	})
	return n, err
}

func (s *Service) reapExpired(ctx context.Context, tx pgx.Tx, project uuid.UUID, limit int) (int, error) {
	q := dbq.New()
	expired, err := q.ExpireLeases(ctx, tx, dbq.ExpireLeasesParams{
		Now: s.clock.Now(), ProjectID: project, MaxLeases: int32(limit),
	})
	if err != nil {
		return 0, err
	}
	for _, e := range expired {
		if e.OnExpiry == graph.OnExpiryReconcile {
			if err := s.holdUncertain(ctx, tx, project, e); err != nil {
				return 0, err
			}
			continue
		}
		if int(e.ConsecutiveExpiries) < s.cfg.MaxExpiries {
			continue
		}
		leaseID, epoch := e.LeaseID, e.Epoch
		_, err := s.attentionOn(tx).Open(ctx, project, e.ItemID, attention.NewRequest{
			Question: fmt.Sprintf("The leases of this item expired %d times in a row (the last one held by %q) "+
				"without the worker finishing, failing or releasing it. Resolve to hand it out again, or cancel it.",
				e.ConsecutiveExpiries, e.Worker),
			Blocking:    true,
			Source:      attention.SourceSystem,
			Reason:      attention.ReasonRepeatedExpiry,
			RequestedBy: "system",
			LeaseID:     &leaseID,
			Epoch:       &epoch,
		})
		if err != nil {
			return 0, err
		}
		if err := q.ResetExpiries(ctx, tx, dbq.ResetExpiriesParams{ProjectID: project, ItemID: e.ItemID}); err != nil {
			return 0, err
		}
	}
	return len(expired), nil
}
