// Package lease owns execution leases: the atomic claim of the next ready
// item, the fenced worker mutations (heartbeat, complete, release, fail,
// decompose, ask), expiry (at claim time and by the Sweeper), the immutable
// lease history with its refused late reports, and the long poll
// (ClaimWait with a Notifier on LISTEN/NOTIFY).
//
// # Claim
//
// One statement that takes the highest-priority ready item through the
// partial index items_claim with FOR UPDATE SKIP LOCKED, increments its
// epoch, makes the new lease its active_lease_id and inserts the lease, and
// answers the lease with the item (ClaimItemDirect, no transaction around
// it). It claims nothing when a lease of the project is past its expiry
// and not ended (the earliest expiry of the project's live leases, from
// the partial index leases_active_expiry) or the token is within
// tokenLockSlack of MaxActivePerToken; then, and when nothing was claimed,
// the claim is one transaction: end the project's expired leases, count
// the token's live leases under its advisory lock near the limit, claim
// (ClaimItem). Concurrent claimers never wait for each other and never get
// the same item; the unique partial index leases_one_active is the
// database's own guarantee of at most one active lease per item.
//
// # The fencing rule
//
// The epoch is the fencing token: per item, incremented by every claim,
// whoever claims, so a worker restarted under the same label gets a new
// epoch and its old incarnation is fenced off. Every worker mutation
// presents lease id + epoch (Fence; an epoch below 1 is invalid_argument),
// and the statement that writes carries the predicate
//
//	project_id = $project AND id = $lease AND epoch = $epoch
//	AND ended_at IS NULL AND expires_at > $at
//	AND the item's active_lease_id and epoch are this lease's
//
// (EndLease, HeartbeatLease; LockLease takes the row lock under the same
// predicate for mutations that write elsewhere before ending the lease).
// Heartbeat, Complete, Release and Fail fence in the one statement that
// writes the lease. Ask and Decompose span statements inside one
// transaction: LockLease locks the lease row under the fence (FOR UPDATE),
// the attention request or the children are written, and EndLease then
// ends the lease under the fence again; the row lock keeps every other
// writer of the lease out in between, and a lease that expired in between
// fails the second fence, so nothing decided on the first reading is
// written unfenced. No fence is a read whose answer a later statement
// trusts. Zero rows means the
// fence did not hold: the transaction rolls back, so nothing changed, and a
// second transaction decides the answer:
//
//   - no such lease in the project: not_found;
//   - a completion repeating the committed completion of the same lease and
//     epoch with an equal result (jsonb equality): acknowledged, Replayed;
//   - a completion with a different result: conflicting_result; the first
//     result stands and the refused one is kept as an observation;
//   - anything else: lease_lost, recorded as a stale_call observation.
//
// A completion whose fence holds but whose item waits for work added while
// it was leased (an unfinished dependency, an open child) is refused by
// the same statement, on the item's newest row version: EndLease raises
// WG007 (blocked; nothing changes, the lease stays live), CompleteLeases
// leaves the entry out and it is answered blocked. A statement that ended
// a lease without freeing its item (an item changed under it) raises
// WG003, so no lease ever ends without its item.
//
// Refused reports are counted per lease and kind (lease_refusals, shown as
// Lease.StaleCalls); the first 20 of each kind are kept as rows of the
// append-only lease_observations and the last 5 in lease_refusals.recent,
// so a person sees how a worker began and how it goes on after losing its
// lease, and a worker that keeps talking cannot grow the tables.
//
// Expiry is decided by the database clock (or the injected clock.Stub in
// tests, passed into every statement as "now"). A heartbeat after expiry is
// refused even if no one has ended the lease yet: it never resurrects it.
// Worker-supplied times (WorkerTime) are stored as diagnostics only.
//
// # Which instant a statement uses
//
// On the database clock ($at above) a statement reads the clock itself,
// never its transaction's start (now(), which a slow link or a held lock
// may leave far behind): a claim stamped at its transaction's start would
// overlap the lease a concurrent release ended after that start, and a
// delayed one would hand out a lease already expired. The rule, checked
// statement by statement (db/queries/lease.sql, graph.sql, attention.sql):
//
//   - ClaimItem stamps acquired_at once it holds the item's row
//     (clock_timestamp() evaluated per taken row), never before the item's
//     previous lease ended (greatest with its ended_at), and expires_at is
//     acquired_at + TTL exactly; its time gates (retry backoff, continuity
//     window) compare with statement_timestamp(), which is not later;
//   - HeartbeatLease, EndLease and LockLease read clock_timestamp() once
//     and both fence and stamp with it: ended_at is never past expires_at,
//     and a renewal's expires_at - heartbeat_at is exactly its TTL (which
//     the next TTL-keeping renewal reuses); a stamp is never before the
//     lease's earlier stamps, even when the statement read the clock and
//     then waited for the row while a heartbeat renewed it; EndLease's
//     retry backoff and finished_at start at ended_at. Ask and Decompose
//     lock the lease (LockLease) and later end it (EndLease), each fenced
//     on its own reading: a lease that expires in between is lost, since
//     its end would come after its expiry;
//   - ExpireLeases and ProjectsWithExpiredLeases (the claim's reaping and
//     the Sweeper), ClaimItemDirect's guards and CountActiveForToken judge
//     with statement_timestamp()
//     (stable, so the expiry indexes apply); an expired lease ends at its
//     expires_at, so the next claim starts after it;
//   - a person's cancel (EndLeasesCancelled, DismissAttentionCancelled),
//     RequestStop and the refusal records stamp the statement's clock; a
//     cancel ends a lease it finds already expired as "expired" at its
//     expires_at, so no lease ends after its expiry;
//   - an attention request's created_at (InsertAttention) and resolved_at
//     (CloseAttention) are their statement's, so a request opened because
//     a lease ended (repeated failure, repeated expiry) is created after
//     the lease's ended_at; the continuity window
//     (ReleaseItemFromAttention) starts when the resolving statement holds
//     the item.
//
// The items' updated_at outside the claim and EndLease, and a cancelled
// item's finished_at, keep their transaction's start: they stamp no lease
// and decide nothing.
//
// # Ending a lease
//
// Complete, Release, Fail, Decompose and a blocking Ask end the lease
// (ended_at, outcome, outcome_detail) and clear the item's active_lease_id,
// set its previous_worker and reset its consecutive expiry count, in one
// transaction with the graph or attention work (graph.Service's
// ReleaseFinished and CreateChildren, attention.Service's Open, each On the
// lease's transaction, in a savepoint of it). Complete's ending statement
// also marks the item done, so the item is never momentarily ready inside
// the transaction. On a pool, without a before-commit hook or usage, a
// completion is that transaction in one round trip: the ending statement
// and graph.Service's ReleaseCompleted pipelined as one batch (db.Pipeline),
// the ending statement raising on a lost fence so that the batch aborts
// whole. Fail counts the failure and sets a retry backoff
// (RetryBackoff doubled per earlier consecutive failure, capped at
// MaxRetryBackoff); after MaxFailures it opens a blocking system attention
// request (repeated_failure) instead. An item in its backoff is marked
// (in_backoff) and held apart from the claim indexes, in items_backoff by
// the instant its backoff ends: claims read only the front of it whose
// instant has passed, so a backlog of failed items costs a claim nothing,
// and an item competes at its priority from that instant on; the Sweeper
// clears the mark of the items whose instant passed (ClearDueBackoffs). Expiry counts
// consecutive expiries; after MaxExpiries the item gets a repeated_expiry
// request instead of going back into circulation. A person's cancel ends
// the lease as cancelled (package graph). There is no pre-emption: a
// person's hold or a higher-priority item never ends an active lease;
// RequestStop only tells the worker on its next heartbeat.
//
// # The long poll
//
// ClaimWait claims, and when nothing is ready waits for a turn from the
// replica's Notifier. The workgraph_ready notification names the item, its
// labels and its reservation (migration 00030), and the notifier gives it
// to one waiting claim whose filter takes the item, not to every waiter of
// the project. Each notification is an event that stays pending until a
// grant takes its item or a claim that began after it arrived, with a
// filter that takes it, finds nothing; a waiter that does not use its
// event hands it on; a waiter that becomes idle takes a pending event. A
// new waiting claim claims before it waits, unless its filter's last claim
// found nothing in this recheck round and nothing since escaped the
// notifier. What a notification does not report (the LISTEN connection
// lost, a payload without the item, a claim's error) wakes every waiter of
// the project; a time gate that opens (a retry backoff or a continuity
// window ends) becomes an event at its instant, for every item due then
// (due.go), and a periodic recheck, one waiter per label set, is the
// safety net. wake.go states the rules and argues that no wake-up is lost;
// Notifier.Stats counts claim transactions against grants.
//
// # History
//
// Leases are never deleted; an ended lease is frozen and an active lease's
// identity (item, epoch, worker, principal, token, acquired_at) never
// changes. Triggers in the schema enforce both, so not even a bug here can
// rewrite history.
//
// # Continuity
//
// When a blocking request is resolved, the worker whose lease ended for it
// is preferred for a window (see package attention): its worker label and
// the token its lease was granted to, both, since the label is
// self-declared. The claim statement honours it and any claim clears it.
package lease
