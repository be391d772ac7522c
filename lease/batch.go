package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/attention"
	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/graph"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// MaxBatch bounds the items of one batch claim and the entries of one
// batch completion or heartbeat.
const MaxBatch = 100

// CompletionEntry is one entry of a batch completion: the lease's fence,
// its result, the worker's clock (diagnostic) and its final usage
// (monotonic, as for CompleteWithUsage).
type CompletionEntry struct {
	Fence
	Result     json.RawMessage
	WorkerTime *time.Time
	Usage      Usage
}

// CompletionAnswer answers one entry of a batch completion: the
// Completion, or Err (not_found, forbidden, lease_lost, conflicting_result
// or blocked, as Complete would have answered that entry alone).
type CompletionAnswer struct {
	Completion Completion
	Err        error
}

// HeartbeatEntry is one entry of a batch heartbeat.
type HeartbeatEntry struct {
	Fence
	Heartbeat
}

// HeartbeatAnswer answers one entry of a batch heartbeat: the renewal, or
// Err (not_found, forbidden or lease_lost, as Heartbeat would have
// answered that entry alone).
type HeartbeatAnswer struct {
	Result HeartbeatResult
	Err    error
}

// ClaimBatch is Claim for up to max (1..MaxBatch) items: it grants the
// highest-priority ready items in one statement (FOR UPDATE SKIP LOCKED),
// each with its own epoch increment and its own lease row. Labels, retry
// backoff and continuity reservations apply to each item as to a single
// claim; MaxActivePerToken counts each lease, so a batch is cut to the
// token's remaining room. Capabilities and write scopes apply as to a
// single claim, and the batch grants the items a sequence of single
// claims would, in their order (priority, then age): the batch's one
// statement takes the items without touches that come before the first
// claimable item with touches, and the batch then takes that item and the
// next ones one at a time by the single claim's statement (fillScoped),
// which holds their scopes against every other live lease, those of the
// same batch included. The claims come in grant order, each with its item
// as the claim left it and its item's attention history as a single claim
// hands it over (the latest ClaimHistory requests within page.MaxBytes,
// and whether older ones exist): the histories of all the granted items
// that have one are read by one statement after the claim (withHistories),
// however many items the batch holds.
//
// As for Claim, the common case is that one statement with no transaction
// around it (ClaimItems, guarded: no lease of the project due, the token
// far from its limit), then a statement per item with touches; when a
// guard holds it back, the batch runs as one transaction that first ends
// the project's expired leases and counts the token's live leases under
// its lock, then claims.
//
// Errors: ErrNothingReady; no_match as Claim's (ready items exist, none of
// whose requires the capabilities cover); invalid_argument (max_items,
// worker, ttl, labels, capabilities); rate_limited when the token already
// holds MaxActivePerToken live leases.
func (s *Service) ClaimBatch(ctx context.Context, project uuid.UUID, req ClaimRequest, max int) ([]Claim, error) {
	if max < 1 || max > MaxBatch {
		return nil, wgerr.InvalidField("max_items", "must be between 1 and %d, got %d", MaxBatch, max)
	}
	req, ttl, err := s.cleanClaim(req)
	if err != nil {
		return nil, err
	}
	if err := s.recordOffer(ctx, s.exec, project, req); err != nil {
		return nil, err
	}
	out, next, err := s.claimBatchDirect(ctx, project, req, ttl, max)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 && next != nothingReady {
		out, err = s.claimBatchInTx(ctx, project, req, ttl, max, next == noneMatches)
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, ErrNothingReady
	}
	return s.withHistories(ctx, project, out)
}

// grant is a claim of a batch before its attention history is read, and
// whether its item has one (the claiming statement's answer).
type grant struct {
	Claim
	hasAttention bool
}

// withHistories returns the batch's claims, in grant order, each with its
// item's attention history as a single claim hands it over (withHistory):
// the histories of all the items that have one are read in one statement
// (attention.Service.LatestOfItems), none when no item has one. They are
// read once the claims are granted, on the service's executor.
func (s *Service) withHistories(ctx context.Context, project uuid.UUID, gs []grant) ([]Claim, error) {
	var items []uuid.UUID
	for _, g := range gs {
		if g.hasAttention {
			items = append(items, g.Lease.ItemID)
		}
	}
	var hs map[uuid.UUID]attention.History
	if len(items) > 0 {
		var err error
		if hs, err = s.attentionOn(s.exec).LatestOfItems(ctx, project, items, ClaimHistory); err != nil {
			return nil, err
		}
	}
	out := make([]Claim, len(gs))
	for i, g := range gs {
		out[i] = g.Claim
		out[i].Attention, out[i].OlderAttention = []attention.Request{}, false
		if h, ok := hs[g.Lease.ItemID]; ok && g.hasAttention {
			if h.Requests != nil {
				out[i].Attention = h.Requests
			}
			out[i].OlderAttention = h.Older != ""
		}
	}
	return out, nil
}

// claimBatchDirect is the batch claim's one statement (in a transaction
// only when a before-commit hook must fence it, as for claimDirect).
// out holds the claims it granted; when there are none, next says why (as
// claimDirect's): nothing to claim, or the transactional path must decide.
func (s *Service) claimBatchDirect(ctx context.Context, project uuid.UUID, req ClaimRequest, ttl time.Duration, max int) (out []grant, next afterDirect, err error) {
	quiet := 0
	if s.cfg.MaxActivePerToken > 0 && req.TokenID != nil {
		// tokenRoom grants the whole batch without the token's lock below
		// this many live leases.
		if quiet = s.cfg.MaxActivePerToken - tokenLockSlack - max; quiet <= 0 {
			return nil, decideInTx, nil
		}
	}
	now := s.clock.Now()
	if len(req.Capabilities) > 0 && !db.HasBeforeCommit(ctx) {
		// A claim whose capabilities none of the first ready items needs
		// only (a gpu worker behind a tpu backlog): ClaimItems, which
		// walks the claim order, would read every item it cannot take;
		// the single claim's statement reads only those it can
		// (migration 00113). The batch is then a sequence of single
		// claims, in their order, as fillScoped grants items with touches.
		past, err := dbq.New().ClaimSearchesPastHead(ctx, s.exec, dbq.ClaimSearchesPastHeadParams{
			ProjectID: project, Labels: req.Labels, Capabilities: req.Capabilities,
		})
		if err != nil {
			return nil, decideInTx, db.Translate(err)
		}
		if past {
			if out, err = s.fillScoped(ctx, s.exec, project, req, ttl, nil, max, now, quiet); err != nil || len(out) > 0 {
				return out, nothingReady, err
			}
			return s.afterEmptyBatch(ctx, project, req, ttl, max, now, quiet)
		}
	}
	claim := func(exec db.Executor) error {
		rows, err := dbq.New().ClaimItems(ctx, db.CustomPlan(exec), s.claimItemsParams(project, req, ttl, max, now, true, quiet))
		if err != nil || len(rows) == 0 {
			out = nil
			return err
		}
		if out = grantsOf(rows); !rows[0].ScopedReady {
			return nil // no item with touches is ready: nothing to fill the batch with
		}
		out, err = s.fillScoped(ctx, exec, project, req, ttl, out, max, now, quiet)
		return err
	}
	if db.HasBeforeCommit(ctx) {
		err = db.InTx(ctx, s.exec, func(tx pgx.Tx) error { return claim(tx) })
	} else {
		err = db.Atomic(ctx, s.exec, func(q db.DBTX) error { return claim(q.(db.Executor)) })
	}
	if err != nil || len(out) > 0 {
		return out, nothingReady, err
	}
	return s.afterEmptyBatch(ctx, project, req, ttl, max, now, quiet)
}

// afterEmptyBatch decides what a batch claim's one-statement path that
// claimed nothing answers: claimBatchDirect's out and next.
func (s *Service) afterEmptyBatch(ctx context.Context, project uuid.UUID, req ClaimRequest, ttl time.Duration, max int, now *time.Time, quiet int) (out []grant, next afterDirect, err error) {
	// Claimed nothing: a guard, or nothing to claim (one read tells), or
	// only items with touches (missed: the transactional path fills the
	// batch with them).
	probe, err := dbq.New().ClaimNeedsTx(ctx, s.exec, dbq.ClaimNeedsTxParams{
		ProjectID: project, Now: now, TokenQuiet: int32(quiet), TokenID: req.TokenID,
		Capabilities: req.Capabilities, Labels: req.Labels, Worker: req.Worker,
	})
	if err != nil {
		return nil, decideInTx, db.Translate(err)
	}
	switch {
	case probe.Missed && !probe.NeedsTx && !db.HasBeforeCommit(ctx):
		out, err = s.fillScoped(ctx, s.exec, project, req, ttl, nil, max, now, quiet)
		return out, nothingReady, err
	case probe.NeedsTx, probe.Missed:
		return nil, decideInTx, nil
	case probe.Hopeless:
		// no_match is answered by the transactional path, which reads its
		// details, as Claim's is.
		return nil, noneMatches, nil
	}
	return nil, nothingReady, nil
}

// claimBatchInTx is the batch claim's transactional path: reap, count the
// token's leases near its limit, claim. hopeless as claimInTx's: no_match
// is asked again first, and answered without a search when it holds.
func (s *Service) claimBatchInTx(ctx context.Context, project uuid.UUID, req ClaimRequest, ttl time.Duration, max int, hopeless bool) ([]grant, error) {
	var out []grant
	var noMatch *wgerr.Error
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) error {
		out, noMatch = nil, nil
		if _, err := s.reapExpired(ctx, tx, project, reapBatch); err != nil {
			return err
		}
		room, err := s.tokenRoom(ctx, tx, req.TokenID, max)
		if err != nil {
			return err
		}
		if hopeless {
			if noMatch, err = s.noMatch(ctx, tx, project, req.Capabilities, req.Labels); err != nil || noMatch != nil {
				return err
			}
		}
		rows, err := dbq.New().ClaimItems(ctx, db.CustomPlan(tx), s.claimItemsParams(project, req, ttl, room, s.clock.Now(), false, 0))
		if err != nil {
			return err
		}
		out = grantsOf(rows)
		if out, err = s.fillScoped(ctx, tx, project, req, ttl, out, room, s.clock.Now(), 0); err != nil || len(out) > 0 {
			return err
		}
		// Nothing granted: commit what the reaping did; no_match when
		// waiting would not help.
		noMatch, err = s.noMatch(ctx, tx, project, req.Capabilities, req.Labels)
		return err
	})
	if err == nil && noMatch != nil {
		return nil, noMatch
	}
	return out, err
}

// fillScoped adds to a batch's claims, up to n in all, the items that its
// statement (ClaimItems) leaves out: from the first with touches on, each
// taken by the single claim's statement (ClaimItemDirect), which takes the
// next item in claim order, grants an item with touches only if its
// scopes overlap no live lease's, the batch's earlier ones included, and
// holds them under its scope locks (scopes.go). One item a statement,
// until one claims nothing (the last statement of an under-filled batch);
// a statement that loses a scope's race to a concurrent claim, or that a
// guard holds back (quiet as in claimDirect), ends the filling: the batch
// answers what it holds, and the next claim tries again.
//
// On a pool each statement is a transaction of its own. On a transaction
// (a batch sent with an Idempotency-Key, or the transactional path) each
// statement runs in a savepoint, so a lost race leaves the transaction
// usable, and the transaction holds every grant's scope locks until it
// ends: wg_lock_scopes (migration 00151) then takes the locks of a
// further grant only if they are free, a lock another claim holds being a
// lost race, so that two such transactions never wait on each other.
func (s *Service) fillScoped(ctx context.Context, exec db.Executor, project uuid.UUID, req ClaimRequest, ttl time.Duration, out []grant, n int, now *time.Time, quiet int) ([]grant, error) {
	for len(out) < n {
		var row dbq.ClaimItemDirectRow
		err := db.Atomic(ctx, exec, func(q db.DBTX) (err error) {
			row, err = dbq.New().ClaimItemDirect(ctx, q, dbq.ClaimItemDirectParams{
				LeaseID: newLeaseID(), Worker: req.Worker, TokenID: req.TokenID, Principal: req.Principal,
				Now: now, TtlMs: ttl.Milliseconds(), ProjectID: project, Labels: req.Labels,
				TokenQuiet: int32(quiet), Capabilities: req.Capabilities,
			})
			return err
		})
		if errors.Is(err, pgx.ErrNoRows) || db.ScopeRace(err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, grant{
			Claim:        Claim{Lease: fromRow(row.Lease, 0), Item: graph.ClaimedItem(row.Item, row.DbNow)},
			hasAttention: row.HasAttention,
		})
	}
	return out, nil
}

// claimItemsParams are ClaimItems' parameters for n items; guarded is the
// one-statement path (quiet as in ClaimItemDirect: 0 counts nothing), not
// guarded the transactional path, which reaped and counted first.
func (s *Service) claimItemsParams(project uuid.UUID, req ClaimRequest, ttl time.Duration, n int, now *time.Time, guarded bool, quiet int) dbq.ClaimItemsParams {
	return dbq.ClaimItemsParams{
		ProjectID:  project,
		Labels:     req.Labels,
		Now:        now,
		Worker:     req.Worker,
		TokenID:    req.TokenID,
		Guarded:    guarded,
		TokenQuiet: int32(quiet),
		MaxItems:   int32(n),
		Principal:  req.Principal,
		TtlMs:      ttl.Milliseconds(),
		// ClaimItems grants only items without touches; fillScoped takes
		// the others.
		Capabilities: req.Capabilities,
	}
}

// grantsOf converts the granted rows (their histories are read after:
// withHistories).
func grantsOf(rows []dbq.ClaimItemsRow) []grant {
	out := make([]grant, len(rows))
	for i, r := range rows {
		out[i] = grant{Claim: Claim{Lease: fromRow(r.Lease, 0), Item: graph.ClaimedItem(r.Item, r.DbNow)}, hasAttention: r.HasAttention}
	}
	return out
}

// ClaimBatchWait is ClaimBatch as a long poll, as ClaimWait is Claim's: it
// answers as soon as at least one item is granted.
//
// Errors: those of ClaimBatch; unavailable when ctx ends first.
func (s *Service) ClaimBatchWait(ctx context.Context, project uuid.UUID, req ClaimRequest, max int, wait time.Duration, n *Notifier) ([]Claim, error) {
	return claimWaiting(ctx, s, project, req, wait, n,
		func(ctx context.Context) ([]Claim, error) { return s.ClaimBatch(ctx, project, req, max) },
		func(cs []Claim) []uuid.UUID {
			ids := make([]uuid.UUID, len(cs))
			for i, c := range cs {
				ids[i] = c.Item.ID
			}
			return ids
		})
}

// tokenRoom is checkTokenLimit for a batch: how many of want leases the
// token may still take (at least one, else rate_limited). Within want +
// tokenLockSlack of the limit the token's claims are serialised by its
// advisory lock and count again, so concurrent batches cannot overshoot.
func (s *Service) tokenRoom(ctx context.Context, tx pgx.Tx, token *uuid.UUID, want int) (int, error) {
	if s.cfg.MaxActivePerToken <= 0 || token == nil {
		return want, nil
	}
	q := dbq.New()
	count := func() (int, error) {
		n, err := q.CountActiveForToken(ctx, tx, dbq.CountActiveForTokenParams{TokenID: token, Now: s.clock.Now()})
		return int(n), err
	}
	n, err := count()
	if err != nil {
		return 0, err
	}
	if n+want+tokenLockSlack < s.cfg.MaxActivePerToken {
		return want, nil
	}
	if err := q.LockToken(ctx, tx, *token); err != nil {
		return 0, err
	}
	if n, err = count(); err != nil {
		return 0, err
	}
	if n >= s.cfg.MaxActivePerToken {
		return 0, wgerr.New(wgerr.CodeRateLimited, "this token already holds %d live leases (the limit); finish one first", n)
	}
	return min(want, s.cfg.MaxActivePerToken-n), nil
}

// completeLeases ends, in one transaction, every lease of the batch whose
// fence holds and marks its item done (CompleteLeases), then releases the
// items' dependents and parents. Without a caller's transaction or a
// before-commit hook, both statements go as one pipelined batch, one
// round trip (ReleaseCompletedLeases finds the leases the batch's own
// transaction completed); else they run one by one in a transaction. An
// item that changed under the statement fails it with WG003 (db.FenceLost),
// and nothing of the batch is changed.
func (s *Service) completeLeases(ctx context.Context, project uuid.UUID, token *uuid.UUID, doc json.RawMessage, ids []uuid.UUID) ([]dbq.CompleteLeasesRow, error) {
	var rows []dbq.CompleteLeasesRow
	params := dbq.CompleteLeasesParams{Entries: doc, Now: s.clock.Now(), ProjectID: project, TokenID: token}
	if b, ok := s.pipelined(ctx); ok {
		err := db.Pipeline(ctx, b, func(q db.DBTX) (err error) {
			rows, err = dbq.New().CompleteLeases(ctx, q, params)
			return err
		}, func(q db.DBTX) error {
			return s.graphOn(s.exec).ReleaseCompletedBatch(ctx, q, project, ids)
		})
		return rows, err
	}
	err := db.InTx(ctx, s.exec, func(tx pgx.Tx) (err error) {
		rows, err = dbq.New().CompleteLeases(ctx, tx, params)
		if err != nil || len(rows) == 0 {
			return err
		}
		finished := make([]uuid.UUID, len(rows))
		var parents []uuid.UUID
		for i, r := range rows {
			finished[i] = r.Lease.ItemID
			if r.Item.ParentID != nil {
				parents = append(parents, *r.Item.ParentID)
			}
		}
		return s.graphOn(tx).ReleaseFinished(ctx, project, finished, parents)
	})
	return rows, err
}

// completionDoc is one entry of CompleteLeases' @entries.
type completionDoc struct {
	LeaseID    uuid.UUID       `json:"lease_id"`
	Epoch      int64           `json:"epoch"`
	Result     json.RawMessage `json:"result,omitempty"`
	WorkerTime *time.Time      `json:"worker_time,omitempty"`
	usageDoc
}

// CompleteBatch is Complete for up to MaxBatch leases in one transaction:
// one statement ends every lease whose fence holds (each entry fenced on
// its own) and marks its item done, then the items' dependents and
// parents are released as a single completion releases them; without a
// caller's transaction or a before-commit hook, both go in one round trip
// (see completeLeases). Each lease
// gets its own history row and events. An entry whose fence did not hold
// is answered on its own, as Complete answers it (a replay, a conflicting
// result, a stale call: recorded as a refusal), and refuses only itself;
// so does an entry whose item waits for a dependency or an open child
// added while it was leased (blocked: its lease stays live).
// Answers are in the order of the entries. A token, when not nil, is the
// only token whose leases the batch may end (an agent's own): an entry
// naming a lease granted to another is answered forbidden. An entry's
// usage is its lease's final report, monotonic as CompleteWithUsage's.
//
// Errors (of the whole batch, which then changes nothing):
// invalid_argument (no entries, more than MaxBatch, a lease named twice,
// an entry's epoch, result or usage).
func (s *Service) CompleteBatch(ctx context.Context, project uuid.UUID, token *uuid.UUID, entries []CompletionEntry) ([]CompletionAnswer, error) {
	entries = append([]CompletionEntry(nil), entries...)
	docs := make([]completionDoc, len(entries))
	if err := checkBatch("completions", len(entries), func(i int) (uuid.UUID, error) {
		e := &entries[i]
		if err := checkFence(e.Fence); err != nil {
			return e.LeaseID, err
		}
		res, err := optionalJSON("result", e.Result)
		if err != nil {
			return e.LeaseID, err
		}
		if err := e.Usage.Check("usage"); err != nil {
			return e.LeaseID, err
		}
		e.Result = res
		docs[i] = completionDoc{LeaseID: e.LeaseID, Epoch: e.Epoch, Result: res, WorkerTime: e.WorkerTime, usageDoc: usageDocOf(e.Usage)}
		return e.LeaseID, nil
	}); err != nil {
		return nil, err
	}
	doc := mustJSON(docs)
	ids := make([]uuid.UUID, len(entries))
	for i, e := range entries {
		ids[i] = e.LeaseID
	}
	var rows []dbq.CompleteLeasesRow
	var err error
	for attempt := 1; ; attempt++ {
		rows, err = s.completeLeases(ctx, project, token, doc, ids)
		if !db.FenceLost(err) || attempt == 3 {
			break
		}
	}
	if db.FenceLost(err) {
		return nil, wgerr.New(wgerr.CodeConflict, "items of this batch kept changing while it completed them; nothing was changed, send it again")
	}
	if err != nil {
		return nil, err
	}
	at := indexOf(len(entries), func(i int) uuid.UUID { return entries[i].LeaseID })
	answers := make([]CompletionAnswer, len(entries))
	done := make([]bool, len(entries))
	for _, r := range rows {
		i := at[r.Lease.ID]
		done[i] = true
		answers[i] = CompletionAnswer{Completion: Completion{Lease: fromRow(r.Lease, 0), Item: graph.FinishedItem(r.Item)}}
	}
	for i, e := range entries {
		if done[i] {
			continue
		}
		if err := s.checkOwner(ctx, project, token, e.LeaseID); err != nil {
			if !entryError(err) {
				return nil, err
			}
			answers[i] = CompletionAnswer{Err: err}
			continue
		}
		c, err := s.repeatedCompletion(ctx, project, e.Fence, e.Result, e.WorkerTime)
		if err != nil && !entryError(err) {
			return nil, err
		}
		answers[i] = CompletionAnswer{Completion: c, Err: err}
	}
	return answers, nil
}

// heartbeatDoc is one entry of HeartbeatLeases' @entries.
type heartbeatDoc struct {
	LeaseID    uuid.UUID       `json:"lease_id"`
	Epoch      int64           `json:"epoch"`
	TTLMs      int64           `json:"ttl_ms,omitempty"`
	Progress   json.RawMessage `json:"progress,omitempty"`
	WorkerTime *time.Time      `json:"worker_time,omitempty"`
	usageDoc
}

// usageDoc is an entry's usage report in a batch's @entries, in the
// lease row's units (absent figures report nothing, as zero does).
type usageDoc struct {
	TokensIn     int64 `json:"tokens_in,omitempty"`
	TokensOut    int64 `json:"tokens_out,omitempty"`
	CostMicroUSD int64 `json:"cost_micro_usd,omitempty"`
	ToolCalls    int64 `json:"tool_calls,omitempty"`
}

func usageDocOf(u Usage) usageDoc {
	return usageDoc{TokensIn: u.TokensIn, TokensOut: u.TokensOut, CostMicroUSD: u.costMicro(), ToolCalls: u.ToolCalls}
}

// HeartbeatBatch is Heartbeat for up to MaxBatch leases in one statement,
// each entry fenced on its own: a lease past its expiry is never renewed.
// Each answer says whether a person asked the worker to stop and carries
// the closed non-blocking requests of its lease; an entry whose fence did
// not hold is answered (and recorded as a refusal) as Heartbeat answers
// it, and refuses only itself. Answers are in the order of the entries.
// A token, when not nil, is the only token whose leases the batch may
// renew, as for CompleteBatch. Each entry's usage and progress are its
// lease's, as a single heartbeat's: usage monotonic per lease (the largest
// report wins, charged to the worker and the budgets over the item),
// progress_at moved only by a changed marker; and each entry is answered
// stop (StopBudgetExhausted) on its own when a budget over its item is
// spent.
//
// Errors (of the whole batch, which then changes nothing):
// invalid_argument (no entries, more than MaxBatch, a lease named twice,
// an entry's epoch, ttl, progress or usage).
func (s *Service) HeartbeatBatch(ctx context.Context, project uuid.UUID, token *uuid.UUID, entries []HeartbeatEntry) ([]HeartbeatAnswer, error) {
	entries = append([]HeartbeatEntry(nil), entries...)
	docs := make([]heartbeatDoc, len(entries))
	if err := checkBatch("heartbeats", len(entries), func(i int) (uuid.UUID, error) {
		e := &entries[i]
		if err := checkFence(e.Fence); err != nil {
			return e.LeaseID, err
		}
		if e.TTL != 0 {
			if err := s.cfg.checkTTL("ttl", e.TTL); err != nil {
				return e.LeaseID, err
			}
		}
		progress, err := optionalJSON("progress", e.Progress)
		if err != nil {
			return e.LeaseID, err
		}
		if err := e.Usage.Check("usage"); err != nil {
			return e.LeaseID, err
		}
		e.Progress = progress
		docs[i] = heartbeatDoc{LeaseID: e.LeaseID, Epoch: e.Epoch, TTLMs: e.TTL.Milliseconds(), Progress: progress,
			WorkerTime: e.WorkerTime, usageDoc: usageDocOf(e.Usage)}
		return e.LeaseID, nil
	}); err != nil {
		return nil, err
	}
	rows, err := dbq.New().HeartbeatLeases(ctx, s.exec, dbq.HeartbeatLeasesParams{
		Entries: mustJSON(docs), Now: s.clock.Now(), ProjectID: project, TokenID: token,
	})
	if err != nil {
		return nil, db.Translate(err)
	}
	at := indexOf(len(entries), func(i int) uuid.UUID { return entries[i].LeaseID })
	answers := make([]HeartbeatAnswer, len(entries))
	done := make([]bool, len(entries))
	for _, r := range rows {
		answer, older := []attention.Request{}, false
		if r.HasAnswers {
			if answer, older, err = s.attentionOn(s.exec).ClosedForLease(ctx, project, r.Lease.ID); err != nil {
				return nil, err
			}
		}
		l := fromRow(r.Lease, 0)
		i := at[l.ID]
		done[i] = true
		res, err := s.heartbeatResult(ctx, project, l, answer, older)
		if err != nil {
			return nil, err
		}
		answers[i] = HeartbeatAnswer{Result: res}
	}
	for i, e := range entries {
		if done[i] {
			continue
		}
		err := s.checkOwner(ctx, project, token, e.LeaseID)
		if err == nil {
			err = s.refused(ctx, project, e.Fence, opHeartbeat, e.WorkerTime, map[string]any{"progress": e.Progress})
		}
		if !entryError(err) {
			return nil, err
		}
		answers[i] = HeartbeatAnswer{Err: err}
	}
	return answers, nil
}

// checkOwner refuses (forbidden) a batch entry naming a lease of the
// project that was granted to another token than token (nil: any token
// may act). A lease that does not exist, or is another project's, passes:
// its entry is answered not_found, so a batch learns nothing of another
// project's leases.
func (s *Service) checkOwner(ctx context.Context, project uuid.UUID, token *uuid.UUID, leaseID uuid.UUID) error {
	if token == nil {
		return nil
	}
	of, owner, err := s.Holder(ctx, leaseID)
	if wgerr.CodeOf(err) == wgerr.CodeNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	if of != project {
		return nil
	}
	if owner == nil || *owner != *token {
		return wgerr.New(wgerr.CodeForbidden, "lease %s was granted to another token; an agent may only act on its own leases", leaseID)
	}
	return nil
}

// checkBatch checks a batch of n entries named list: 1..MaxBatch of them,
// each valid (check) and naming its lease once. An entry's error names
// its field as list[i].field.
func checkBatch(list string, n int, check func(i int) (uuid.UUID, error)) error {
	if n < 1 || n > MaxBatch {
		return wgerr.InvalidField(list, "must hold 1 to %d entries, got %d", MaxBatch, n)
	}
	seen := make(map[uuid.UUID]bool, n)
	for i := range n {
		id, err := check(i)
		if err != nil {
			return entryField(err, fmt.Sprintf("%s[%d]", list, i))
		}
		if seen[id] {
			return wgerr.InvalidField(fmt.Sprintf("%s[%d].lease_id", list, i), "names lease %s a second time; a batch names each lease once", id)
		}
		seen[id] = true
	}
	return nil
}

// entryField names an entry's invalid field by its place in the batch.
func entryField(err error, prefix string) error {
	var we *wgerr.Error
	if !errors.As(err, &we) || we.Field == "" {
		return err
	}
	out := *we
	out.Field = prefix + "." + we.Field
	if rest, ok := cutFieldPrefix(we.Message, we.Field+":"); ok {
		out.Message = out.Field + ":" + rest
	}
	return &out
}

func cutFieldPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// entryError reports whether err is an answer to one entry (its lease is
// unknown, not the caller's, lost, or completed differently, or its item
// waits for unfinished work) rather than a
// failure of the whole batch (the database is unavailable).
func entryError(err error) bool {
	switch wgerr.CodeOf(err) {
	case wgerr.CodeNotFound, wgerr.CodeForbidden, wgerr.CodeLeaseLost, wgerr.CodeConflictingResult, wgerr.CodeBlocked:
		return true
	}
	return false
}

// indexOf maps each entry's lease id to its place.
func indexOf(n int, id func(int) uuid.UUID) map[uuid.UUID]int {
	out := make(map[uuid.UUID]int, n)
	for i := range n {
		out[id(i)] = i
	}
	return out
}
