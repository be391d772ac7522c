-- Leases: claim, fenced mutations, expiry, history. Owned by package lease.
-- The fence is a predicate in every statement that writes for a worker: the
-- lease id and epoch match, the lease has not ended and has not expired by
-- the given instant (the database clock when it is NULL), and the item still
-- names the lease as its active one. See lease/doc.go.
--
-- The database clock, per statement. When no "now" is given (production),
-- a statement reads the clock itself, never its transaction's start
-- (now()), which under latency or a held lock may be long past:
--   * to judge expiry or a time gate over many rows it compares with
--     statement_timestamp() (stable, so indexes on expires_at apply);
--   * a statement that stamps a lease (claim, heartbeat, end) and fences it
--     reads clock_timestamp() once (the subquery "t" or "grant_time") and
--     both judges and stamps with that one instant, so ended_at is never
--     past expires_at and expires_at - stamp is exactly the TTL; a stamp
--     is never before the lease's earlier ones (greatest(...): the row may
--     have been renewed while the statement waited for its lock);
--   * the claim stamps after it holds the item's row, and never before the
--     item's previous lease ended (greatest(...)), so by the stored
--     timestamps two leases of one item never overlap.
-- A given "now" (a test's stub clock) is used as it is.

-- name: ExpireLeases :many
-- Ends up to @max_leases expired leases of a project as 'expired' and frees
-- their items. Leases another transaction holds are skipped (several
-- sweepers and claimers may run at once; each lease is ended once). The end
-- time is the expiry instant: the lease gave no rights after it. on_expiry
-- is the item's setting (else its project's): for 'reconcile' the caller
-- holds the item for a person (an uncertain_outcome request, in the same
-- transaction) with the attempt's last heartbeat and progress returned here.
WITH due AS (
    SELECT l.id
    FROM leases l
    WHERE l.project_id = @project_id
      AND l.ended_at IS NULL
      AND l.expires_at <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
    ORDER BY l.expires_at
    LIMIT @max_leases
    FOR UPDATE SKIP LOCKED
), ended AS (
    UPDATE leases l
    SET ended_at = l.expires_at,
        outcome = 'expired',
        outcome_detail = jsonb_build_object(
            'reaped_at', coalesce(sqlc.narg('now')::timestamptz, clock_timestamp()),
            'heartbeats', l.heartbeats)
    FROM due
    WHERE l.project_id = @project_id AND l.id = due.id
    RETURNING l.id, l.item_id, l.epoch, l.worker, l.acquired_at, l.expires_at, l.heartbeat_at,
              l.heartbeats, l.progress, l.worker_time
)
UPDATE items i
SET active_lease_id = NULL,
    previous_worker = ended.worker,
    consecutive_expiries = i.consecutive_expiries + 1,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
FROM ended
WHERE i.project_id = @project_id AND i.id = ended.item_id AND i.active_lease_id = ended.id
RETURNING ended.id AS lease_id, ended.item_id, ended.epoch, ended.worker, i.consecutive_expiries,
          ended.acquired_at, ended.expires_at, ended.heartbeat_at, ended.heartbeats, ended.progress,
          ended.worker_time,
          coalesce(i.on_expiry, (SELECT p.on_expiry FROM projects p WHERE p.id = i.project_id))::text AS on_expiry;

-- name: ProjectsWithExpiredLeases :many
-- The sweeper's projects: a scan of the partial index of live leases
-- (leases_active_expiry), never of the history.
SELECT DISTINCT project_id
FROM leases
WHERE ended_at IS NULL AND expires_at <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
LIMIT @max_projects;

-- name: ResetExpiries :exec
UPDATE items SET consecutive_expiries = 0
WHERE project_id = @project_id AND id = @item_id;

-- name: ClaimItem :one
-- Takes the highest-priority ready item (index items_claim, ties
-- first-created first) that carries @labels, is past its retry backoff and
-- is not reserved for another worker by the continuity window (a
-- reservation names the worker label and the token that held the lease:
-- both must match); increments its epoch, makes @lease_id its active lease
-- and records the lease. Rows other claimers hold are skipped. The lease is
-- stamped once the item's row is held (grant_time: evaluated per taken
-- row), never before the item's previous lease ended, and lasts exactly
-- @ttl_ms. The items in a retry backoff are not in the claim indexes
-- (migration 00141): the search merges the others ("walk") with the items
-- whose backoff has passed, from items_backoff ("due"), in claim order, and
-- locks only the item it takes.
--
-- Capabilities and write scopes (one predicate, kept apart below): the
-- item's requires must be a subset of @capabilities, and an item with
-- touches is skipped while a live lease of another item holds an
-- overlapping scope (wg_scope_holder, migration 00041: the scope keys find
-- the live leases that may overlap, wg_scopes_overlap decides). Both
-- tests are functions called only for an item under a budget or with
-- touches, so the statement, planned at each execution (db.CustomPlan),
-- does not plan their queries.
-- For an item without requires or touches the predicate is two
-- comparisons with '{}'. The overlap test here is only a filter: the
-- snapshot may miss a lease being granted at the same moment, so "held"
-- takes the grant's scope locks and re-checks with a fresh snapshot
-- (wg_lock_scopes, as ClaimItemDirect does; WG002 when a concurrent claim
-- won the scope) before the item is written. The lease is stamped after
-- that: a claim that waited for a scope lock never records an acquired_at
-- from before it held its scopes, when an overlapping lease may still have
-- been live.
-- The lease records the item's touches as its scopes (and their keys).
WITH candidate AS MATERIALIZED (
    -- Two sources in claim order, merged (a Merge Append of ordered
    -- reads): "walk", the ready items not in backoff (the claim indexes),
    -- and "due", the items whose retry backoff has passed and is not yet
    -- swept (the front of items_backoff, migration 00141; none when the
    -- sweeper keeps up). Each item is then read again by its key and
    -- locked (SKIP LOCKED) with every filter judged on the row as it
    -- stands; the first that locks is the candidate. So the claim locks
    -- only the item it takes: an item it passes over stays free for a
    -- concurrent claim, however long this transaction lasts.
    SELECT k.project_id, k.id, k.touches
    FROM ((SELECT c.id, c.priority, c.seq
           FROM items c
           WHERE c.project_id = @project_id
             AND c.ready
             AND NOT c.in_backoff
             -- Not held by a live lease's scopes (migration 00167).
             AND NOT c.scope_held
             AND c.labels @> @labels::text[]
             AND (c.not_before IS NULL OR c.not_before <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
             -- Without capabilities this folds to "requires = '{}'", the
             -- predicate of items_ready_unrestricted (migration 00104),
             -- which holds just those in claim order.
             AND (c.requires = '{}'
                  OR (cardinality(coalesce(sqlc.narg('capabilities')::text[], '{}')) > 0
                      AND c.requires <@ sqlc.narg('capabilities')::text[]))
           ORDER BY c.priority DESC, c.seq)
          UNION ALL
          (SELECT d.id, d.priority, d.seq
           FROM items d
           WHERE d.project_id = @project_id
             AND d.ready
             AND d.in_backoff
             AND d.not_before <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
             -- (Not a path through the labels' GIN index, which an empty
             -- set would read whole.)
             AND (cardinality(@labels::text[]) = 0 OR d.labels @> @labels::text[])
           ORDER BY d.priority DESC, d.seq)) AS o (id, priority, seq)
    CROSS JOIN LATERAL (
        SELECT k.project_id, k.id, k.touches
        FROM items k
        WHERE k.project_id = @project_id AND k.id = o.id
          AND k.ready
          AND k.labels @> @labels::text[]
          AND (k.not_before IS NULL OR k.not_before <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
          AND (k.preferred_worker IS NULL
               OR (k.preferred_worker = @worker::text
                   AND k.preferred_token IS NOT DISTINCT FROM sqlc.narg('token_id')::uuid)
               OR k.preferred_until <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
          -- Budgets (migration 00035): an item under a spent budget is not
          -- handed out. Items under no budget pay only the empty-array test.
          AND (k.budget_roots = '{}'
               OR NOT wg_budgets_spent(k.project_id, k.budget_roots,
                                       coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())))
          -- Capabilities and write scopes.
          AND (k.requires = '{}'
               OR (cardinality(coalesce(sqlc.narg('capabilities')::text[], '{}')) > 0
                   AND k.requires <@ sqlc.narg('capabilities')::text[]))
          AND (k.touches = '{}'
               OR wg_scope_holder(k.project_id, NULL, k.touches,
                                  coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())) IS NULL)
        FOR UPDATE OF k SKIP LOCKED
    ) AS k
    ORDER BY o.priority DESC, o.seq
    LIMIT 1
), held AS MATERIALIZED (
    SELECT candidate.project_id, candidate.id
    FROM candidate
    WHERE CASE WHEN candidate.touches = '{}' THEN true
               ELSE wg_lock_scopes(candidate.project_id, @lease_id::uuid, candidate.touches,
                                   sqlc.narg('now')::timestamptz) END
), taken AS (
    UPDATE items i
    SET epoch = i.epoch + 1,
        active_lease_id = @lease_id::uuid,
        preferred_worker = NULL,
        preferred_token = NULL,
        preferred_until = NULL,
        -- A mark an end left on the item (a row it skipped, migration
        -- 00167) goes with the claim.
        scope_held = false,
        updated_at = coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
    FROM held
    WHERE i.project_id = held.project_id AND i.id = held.id
    RETURNING i.project_id, i.id, i.epoch, i.budget_roots, i.touches
), granted AS (
    INSERT INTO leases (project_id, id, item_id, epoch, worker, token_id, principal, acquired_at, expires_at,
                        budget_roots, scopes, scope_resources, scope_keys)
    SELECT taken.project_id, @lease_id, taken.id, taken.epoch, @worker, sqlc.narg('token_id'), @principal,
           grant_time.at,
           grant_time.at + sqlc.arg('ttl_ms')::bigint * interval '1 millisecond',
           taken.budget_roots, taken.touches, wg_scope_resources(taken.touches), wg_scope_keys(taken.touches)
    FROM taken
    CROSS JOIN LATERAL (
        SELECT coalesce(sqlc.narg('now')::timestamptz,
                        greatest(clock_timestamp(),
                                 (SELECT p.ended_at FROM leases p
                                  WHERE p.project_id = taken.project_id AND p.item_id = taken.id
                                    AND p.epoch = taken.epoch - 1))) AS at
    ) AS grant_time
    RETURNING *
)
SELECT sqlc.embed(leases),
       -- Whether the item has an attention history to hand to the worker
       -- (most items have none, and the claim then need not read it).
       EXISTS (SELECT 1 FROM attention_requests r
               WHERE r.project_id = leases.project_id AND r.item_id = leases.item_id) AS has_attention
FROM granted AS leases;

-- name: ClaimItemDirect :one
-- ClaimItem as one statement that needs no transaction around it (the
-- claim's common case, lease.Service.Claim): it also answers the item as it
-- stands after the claim and the database instant its time gates used, and
-- it claims nothing (no row) when either of two guards says the
-- transactional path must run instead:
--   * a lease of the project is past its expiry and not yet ended (the
--     claim's path ends those first, ExpireLeases): the earliest expiry
--     among the project's live leases, read from the partial index
--     leases_active_expiry (a min over live leases only, never the
--     project's history);
--   * @token_quiet > 0 and the token already holds @token_quiet live
--     leases or more (within tokenLockSlack of its limit, where claims of
--     one token are serialised and counted again).
-- An item with touches is granted here too: "held" takes the grant's
-- scope locks and re-checks the overlap with a fresh snapshot
-- (wg_lock_scopes, migration 00041) before the item is written; a claim
-- that lost the race for a scope fails with WG002 and writes nothing (the
-- caller claims again).
-- Items of expired leases return to circulation by the sweeper and by any
-- claim that finds them due; a claim never takes an item whose lease has
-- not ended (the item is not ready while its active_lease_id is set).
WITH candidate AS MATERIALIZED (
    -- The search, its guards and filters are wg_claim_candidate's
    -- (migration 00046): a plan of its own, the same for every project, so
    -- that this statement keeps one plan per session.
    SELECT k.project_id, k.id, k.touches
    FROM wg_claim_candidate(@project_id, @labels::text[], @worker::text, sqlc.narg('token_id')::uuid,
                            sqlc.arg('token_quiet')::int, sqlc.narg('capabilities')::text[],
                            sqlc.narg('now')::timestamptz) AS k (project_id, id, touches)
), held AS MATERIALIZED (
    -- The candidate once its scopes are safe to grant (an item without
    -- touches at once, without a function call).
    SELECT candidate.project_id, candidate.id
    FROM candidate
    WHERE CASE WHEN candidate.touches = '{}' THEN true
               ELSE wg_lock_scopes(candidate.project_id, @lease_id::uuid, candidate.touches,
                                   sqlc.narg('now')::timestamptz) END
), taken AS (
    UPDATE items i
    SET epoch = i.epoch + 1,
        active_lease_id = @lease_id::uuid,
        preferred_worker = NULL,
        preferred_token = NULL,
        preferred_until = NULL,
        -- A mark an end left on the item (a row it skipped, migration
        -- 00167) goes with the claim.
        scope_held = false,
        updated_at = coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
    FROM held
    WHERE i.project_id = held.project_id AND i.id = held.id
    RETURNING i.*
), granted AS (
    INSERT INTO leases (project_id, id, item_id, epoch, worker, token_id, principal, acquired_at, expires_at,
                        budget_roots, scopes, scope_resources, scope_keys)
    SELECT taken.project_id, @lease_id, taken.id, taken.epoch, @worker, sqlc.narg('token_id'), @principal,
           grant_time.at,
           grant_time.at + sqlc.arg('ttl_ms')::bigint * interval '1 millisecond',
           taken.budget_roots, taken.touches,
           -- An item without touches (the common case) skips the two
           -- functions: each is a SQL function that PostgreSQL plans again
           -- at every call.
           CASE WHEN taken.touches = '{}' THEN '{}'::text[] ELSE wg_scope_resources(taken.touches) END,
           CASE WHEN taken.touches = '{}' THEN '{}'::text[] ELSE wg_scope_keys(taken.touches) END
    FROM taken
    CROSS JOIN LATERAL (
        SELECT coalesce(sqlc.narg('now')::timestamptz,
                        greatest(clock_timestamp(),
                                 (SELECT p.ended_at FROM leases p
                                  WHERE p.project_id = taken.project_id AND p.item_id = taken.id
                                    AND p.epoch = taken.epoch - 1))) AS at
    ) AS grant_time
    RETURNING *
)
SELECT sqlc.embed(leases), sqlc.embed(items),
       EXISTS (SELECT 1 FROM attention_requests r
               WHERE r.project_id = leases.project_id AND r.item_id = leases.item_id) AS has_attention,
       coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())::timestamptz AS db_now
FROM granted AS leases
JOIN taken AS items ON items.project_id = leases.project_id AND items.id = leases.item_id;

-- name: ClaimNeedsTx :one
-- After ClaimItemDirect claimed nothing: whether one of its guards held it
-- back (a lease of the project past its expiry and not yet ended, or the
-- token at @token_quiet live leases or more), so the transactional path
-- must decide; false means there was simply nothing to claim; hopeless
-- then says whether nothing ever could be (no_match, see ClaimHopeless),
-- missed whether an item the claim could take is ready after all.
-- The item probes read the claim index in its order (ORDER BY ... LIMIT 1,
-- as ClaimHopeless): written as EXISTS they were planned as a scan of the
-- whole items table that stops at the project's first ready row, which
-- reads every other project's rows first (46-72 ms at 40,000 items in
-- workload 14, the claim's costliest statement there).
SELECT coalesce(
           (SELECT d.expires_at FROM leases d
            WHERE d.project_id = @project_id AND d.ended_at IS NULL
            ORDER BY d.expires_at LIMIT 1)
           <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
           OR (sqlc.arg('token_quiet')::int > 0
               AND (SELECT count(*) FROM leases t
                    WHERE t.token_id = sqlc.narg('token_id')::uuid AND t.ended_at IS NULL
                      AND t.expires_at > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
                   >= sqlc.arg('token_quiet')::int),
           false)::bool AS needs_tx,
       -- As ClaimHopeless: ready items exist, and none requires only
       -- capabilities among these (the answer is then no_match).
       -- (Items in backoff are ready and count: items_backoff, migration
       -- 00141, holds them apart from the claim indexes. Whether one of
       -- them requires nothing is the first entry of
       -- items_backoff_requires, 00160: '{}' is the least text[].)
       -- The items a live lease's scopes hold count too (items_scope_held,
       -- migration 00167).
       (((SELECT true FROM items i WHERE i.project_id = @project_id AND i.ready AND NOT i.in_backoff
          AND NOT i.scope_held
          ORDER BY i.priority DESC, i.seq LIMIT 1) IS NOT NULL
         OR (SELECT true FROM items b WHERE b.project_id = @project_id AND b.ready AND b.in_backoff
             ORDER BY b.not_before LIMIT 1) IS NOT NULL
         OR (SELECT true FROM items h WHERE h.project_id = @project_id AND h.scope_held AND h.ready
             LIMIT 1) IS NOT NULL)
        AND (SELECT true FROM items i
             WHERE i.project_id = @project_id AND i.ready AND NOT i.in_backoff AND NOT i.scope_held
               AND i.requires = '{}'
             ORDER BY i.priority DESC, i.seq LIMIT 1) IS NULL
        AND (SELECT true FROM items h
             WHERE h.project_id = @project_id AND h.scope_held AND h.ready AND h.requires = '{}'
             LIMIT 1) IS NULL
        AND (SELECT b.requires FROM items b
             WHERE b.project_id = @project_id AND b.ready AND b.in_backoff
             ORDER BY b.requires LIMIT 1) IS DISTINCT FROM '{}'::text[]
        AND NOT wg_requires_met(@project_id, sqlc.narg('capabilities')::text[]))::bool AS hopeless,
       -- Whether an item this claim could take is ready now, seen from
       -- this statement's later snapshot. ClaimItemDirect's search runs in
       -- wg_claim_candidate with a snapshot of its own, taken after the
       -- statement's: an item committed ready in between is found and
       -- locked there but is invisible to the statement's UPDATE, which
       -- then writes nothing (ADR 0007, the claim's plan). The claim must
       -- not answer "nothing ready" then: missed sends it to the
       -- transactional path, which searches and writes with one snapshot.
       -- (An item locked by a concurrent claim that takes it counts too:
       -- the transaction then finds nothing, as the direct claim did.)
       -- wg_claimable (migration 00096) chooses, as wg_claim_candidate
       -- does, between the walk of the claim order and the index of the
       -- ready items' labels, so that a claim for labels no ready item
       -- near the head carries does not read the whole ready set here.
       wg_claimable(@project_id, @labels::text[], @worker::text, sqlc.narg('token_id')::uuid,
                    sqlc.narg('capabilities')::text[], coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))::bool AS missed;

-- name: LockToken :exec
-- Serialises the claims of one token while it counts its live leases.
SELECT pg_advisory_xact_lock(hashtextextended(sqlc.arg('token_id')::uuid::text, 7250004));

-- name: CountActiveForToken :one
SELECT count(*)::int
FROM leases
WHERE token_id = @token_id
  AND ended_at IS NULL
  AND expires_at > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp());

-- name: HeartbeatLease :one
-- Fenced renewal. @ttl_ms = 0 keeps the lease's current TTL (the one chosen
-- at the claim or named by the latest heartbeat). has_answers says whether
-- the worker has answered non-blocking questions to receive (most leases
-- have none, and the heartbeat then need not read them).
WITH renewed AS (
    UPDATE leases l
    SET expires_at = coalesce(sqlc.narg('now')::timestamptz, greatest(t.at, l.acquired_at, l.heartbeat_at)) + CASE
            WHEN sqlc.arg('ttl_ms')::bigint > 0 THEN sqlc.arg('ttl_ms')::bigint * interval '1 millisecond'
            ELSE l.expires_at - coalesce(l.heartbeat_at, l.acquired_at)
        END,
        heartbeat_at = coalesce(sqlc.narg('now')::timestamptz, greatest(t.at, l.acquired_at, l.heartbeat_at)),
        heartbeats = l.heartbeats + 1,
        progress = coalesce(sqlc.narg('progress')::jsonb, l.progress),
        worker_time = coalesce(sqlc.narg('worker_time')::timestamptz, l.worker_time),
        -- Progress and usage (migration 00035): progress_at moves only when
        -- the marker changes; each usage figure keeps its largest report.
        progress_at = CASE WHEN sqlc.narg('progress')::jsonb IS NOT NULL
                            AND sqlc.narg('progress')::jsonb IS DISTINCT FROM l.progress
                           THEN coalesce(sqlc.narg('now')::timestamptz, greatest(t.at, l.acquired_at, l.heartbeat_at))
                           ELSE l.progress_at END,
        tokens_in = greatest(l.tokens_in, sqlc.arg('tokens_in')::bigint),
        tokens_out = greatest(l.tokens_out, sqlc.arg('tokens_out')::bigint),
        cost_micro_usd = greatest(l.cost_micro_usd, sqlc.arg('cost_micro_usd')::bigint),
        tool_calls = greatest(l.tool_calls, sqlc.arg('tool_calls')::bigint)
    FROM (SELECT coalesce(sqlc.narg('now')::timestamptz, clock_timestamp()) AS at) AS t
    WHERE l.project_id = @project_id AND l.id = @lease_id AND l.epoch = @epoch
      AND l.ended_at IS NULL
      AND l.expires_at > t.at
      AND EXISTS (SELECT 1 FROM items i
                  WHERE i.project_id = l.project_id AND i.id = l.item_id
                    AND i.active_lease_id = l.id AND i.epoch = l.epoch)
    RETURNING l.*
)
SELECT sqlc.embed(leases),
       EXISTS (SELECT 1 FROM attention_requests r
               WHERE r.project_id = leases.project_id AND r.lease_id = leases.id
                 AND NOT r.blocking AND r.state <> 'open') AS has_answers
FROM renewed AS leases;

-- name: LockLease :one
-- Fenced row lock: holds the lease for the rest of the transaction, so the
-- writes that follow cannot race its expiry or another end.
SELECT l.*
FROM leases l, (SELECT coalesce(sqlc.narg('now')::timestamptz, clock_timestamp()) AS at) AS t
WHERE l.project_id = @project_id AND l.id = @lease_id AND l.epoch = @epoch
  AND l.ended_at IS NULL
  AND l.expires_at > t.at
  AND EXISTS (SELECT 1 FROM items i
              WHERE i.project_id = l.project_id AND i.id = l.item_id
                AND i.active_lease_id = l.id AND i.epoch = l.epoch)
FOR UPDATE OF l;

-- name: EndLease :one
-- Fenced end of a lease by its worker, and the item's side of it in the
-- same statement: the item is freed and remembers the worker. A failure
-- (@failed) counts and sets the retry backoff: @backoff_ms * 2^(failures so
-- far), at most @max_backoff_ms. @reset_expiries clears the consecutive
-- expiry count (the worker came back). A completion (@finish) also marks the
-- item done with the result, so the item goes from leased to done in one
-- row version and is never momentarily ready; the caller then releases its
-- dependents and parent (graph.Service.ReleaseFinished). The answer carries
-- the item row as written. With @abort_if_lost a lost fence raises WG003
-- (lease_fence_held, migration 00042) instead of answering no row, so that
-- it aborts what is pipelined after it in its transaction (a completion's
-- release of dependents, graph.Service.ReleaseCompleted). A completion of
-- an item that waits for a dependency or an open child raises WG007
-- (migration 00064): nothing changes and the lease stays live.
WITH ended AS (
    UPDATE leases l
    SET ended_at = coalesce(sqlc.narg('now')::timestamptz, greatest(t.at, l.acquired_at, l.heartbeat_at)),
        outcome = @outcome,
        outcome_detail = sqlc.narg('outcome_detail'),
        result = sqlc.narg('result'),
        worker_time = coalesce(sqlc.narg('worker_time'), l.worker_time),
        -- The final usage report (migration 00035), monotonic as in
        -- HeartbeatLease.
        tokens_in = greatest(l.tokens_in, sqlc.arg('tokens_in')::bigint),
        tokens_out = greatest(l.tokens_out, sqlc.arg('tokens_out')::bigint),
        cost_micro_usd = greatest(l.cost_micro_usd, sqlc.arg('cost_micro_usd')::bigint),
        tool_calls = greatest(l.tool_calls, sqlc.arg('tool_calls')::bigint)
    FROM (SELECT coalesce(sqlc.narg('now')::timestamptz, clock_timestamp()) AS at) AS t
    WHERE l.project_id = @project_id AND l.id = @lease_id AND l.epoch = @epoch
      AND l.ended_at IS NULL
      AND l.expires_at > t.at
    RETURNING l.*
), freed AS (
    UPDATE items i
    SET active_lease_id = NULL,
        previous_worker = ended.worker,
        consecutive_expiries = CASE WHEN @reset_expiries::boolean THEN 0 ELSE i.consecutive_expiries END,
        failures = i.failures + CASE WHEN @failed::boolean THEN 1 ELSE 0 END,
        not_before = CASE WHEN @failed::boolean
            THEN ended.ended_at + least(
                sqlc.arg('backoff_ms')::bigint::float8 * power(2::float8, least(i.failures, 40)),
                sqlc.arg('max_backoff_ms')::bigint::float8) * interval '1 millisecond'
            ELSE i.not_before END,
        -- The item leaves the claim indexes for items_backoff until the
        -- sweeper sees its backoff pass (migration 00141).
        in_backoff = @failed::boolean OR i.in_backoff,
        -- A completion of an item that waits for a dependency or a child
        -- (added while it was leased) raises WG007 (item_finishable,
        -- migration 00064): computed in the SET, from the row version this
        -- statement writes, which is the newest under READ COMMITTED, so a
        -- concurrent addition is seen. CASE keeps the release and the
        -- failure from calling it.
        status = CASE WHEN NOT @finish::boolean THEN i.status
                      WHEN item_finishable(i.unmet_dependencies, i.open_children) THEN 'done' END,
        result = CASE WHEN @finish::boolean THEN sqlc.narg('result')::jsonb ELSE i.result END,
        finished_at = CASE WHEN @finish::boolean THEN ended.ended_at ELSE i.finished_at END,
        updated_at = ended.ended_at
    FROM ended
    WHERE i.project_id = ended.project_id AND i.id = ended.item_id
      AND i.active_lease_id = ended.id AND i.epoch = ended.epoch
      AND (NOT @finish::boolean OR i.status = 'open')
    RETURNING i.*
), held AS (
    SELECT lease_fence_held(count(*), @abort_if_lost::boolean) AS ok FROM ended, freed
)
-- The item as this statement left it (a completion answers it: its
-- dependents and parent are other rows). held is a one-time filter (a
-- subquery without a column of the join), so it runs even when the join
-- has no row. A lease this statement ended without freeing its item (an
-- item that no longer names it) raises WG003 whatever @abort_if_lost
-- says: a left join, so that such a lease is a row the check sees (an
-- inner join has no row to check, and the lease ended without its item
-- committed, answered as a replay). lease_fence_held is not strict, so
-- the planner keeps the join outer.
SELECT ended.*, items.failures, items.parent_id, sqlc.embed(items)
FROM ended
LEFT JOIN freed AS items ON items.project_id = ended.project_id AND items.id = ended.item_id
WHERE (SELECT held.ok FROM held)
  AND lease_fence_held(CASE WHEN items.id IS NULL THEN 0 ELSE 1 END, true);

-- name: ClearRetry :exec
-- The item stops retrying on its own: its failures were handed to a person.
UPDATE items SET failures = 0, not_before = NULL, in_backoff = false
WHERE project_id = @project_id AND id = @item_id;

-- name: ProjectsWithDueBackoffs :many
-- The sweeper's projects for ClearDueBackoffs: a scan of items_backoff
-- (migration 00141: the ready items in a retry backoff only), never of the
-- project's other items.
SELECT DISTINCT project_id
FROM items
WHERE ready AND in_backoff
  AND not_before <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
LIMIT @max_projects;

-- name: ClearDueBackoffs :execrows
-- The sweeper's part of retry backoffs (migration 00141), in one project:
-- up to @max_items of its ready items whose backoff has passed, by the
-- database clock or the given now, go back to the claim indexes. Claims
-- take such an item before this runs (they read the due front of
-- items_backoff), so this only keeps that front short. Rows another
-- transaction holds are skipped (a claim taking the item); clearing is
-- idempotent, and a row whose backoff was set again meanwhile (a new
-- failure) is judged as it stands (the UPDATE's own predicate), so no item
-- is cleared before its instant.
WITH due AS (
    SELECT b.project_id, b.id
    FROM items b
    WHERE b.project_id = @project_id AND b.ready AND b.in_backoff
      AND b.not_before <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
    ORDER BY b.not_before
    LIMIT @max_items
    FOR UPDATE SKIP LOCKED
)
UPDATE items i
SET in_backoff = false
FROM due
WHERE i.project_id = @project_id AND i.id = due.id
  AND i.in_backoff
  AND i.not_before <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp());

-- name: ProjectsWithScopeHolds :many
-- The sweeper's projects for ClearStaleScopeHolds: a scan of
-- items_scope_held (migration 00167: the marked items only).
SELECT DISTINCT project_id
FROM items
WHERE scope_held
LIMIT @max_projects;

-- name: ClearStaleScopeHolds :execrows
-- The sweeper's re-judgement of scope marks (migration 00167), in one
-- project: up to @max_items marked items that no live lease's scopes
-- overlap go back to the claim indexes. Lease ends clear the items they
-- held (leases_release_scoped_items); this only undoes a mark none of them
-- cleared (an edit of the touches, a row skipped), so no item stays hidden
-- longer than a sweep. Rows another transaction holds are skipped; a mark
-- cleared while a lease holds the item hides nothing (claims test
-- wg_scope_holder), so the statement's snapshot is enough.
WITH stale AS (
    SELECT h.project_id, h.id
    FROM items h
    WHERE h.project_id = @project_id AND h.scope_held
      AND (h.touches = '{}' OR wg_scope_holder(h.project_id, NULL, h.touches, NULL) IS NULL)
    LIMIT @max_items
    FOR UPDATE SKIP LOCKED
)
UPDATE items i
SET scope_held = false
FROM stale
WHERE i.project_id = @project_id AND i.id = stale.id AND i.scope_held;

-- name: RequestStop :one
-- The first request stands: its time, who asked and why (@note, NULL: no
-- reason given).
UPDATE leases
SET stop_requested_at = coalesce(stop_requested_at, coalesce(sqlc.narg('now')::timestamptz, clock_timestamp())),
    stop_requested_by = coalesce(stop_requested_by, @requested_by),
    stop_note = CASE WHEN stop_requested_at IS NULL THEN sqlc.narg('note')::text ELSE stop_note END
WHERE project_id = @project_id AND id = @lease_id AND ended_at IS NULL
RETURNING *;

-- name: GetLease :one
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
WHERE l.project_id = @project_id AND l.id = @lease_id;

-- name: LeaseHeld :one
-- Whether a lease is held at an instant (@now, NULL: the database's
-- clock): not ended and not expired, judged as the fence judges it. For
-- choosing the answer to a refused call (blocked or lease_lost), never to
-- write.
SELECT (l.ended_at IS NULL AND l.expires_at > coalesce(sqlc.narg('now')::timestamptz, clock_timestamp()))::boolean AS held
FROM leases l
WHERE l.project_id = @project_id AND l.id = @lease_id;

-- name: LeaseHolder :one
-- The project of a lease and the token it was granted to (both immutable).
SELECT project_id, token_id FROM leases WHERE id = @lease_id;

-- name: SameResult :one
-- Whether a repeated completion carries the committed result (jsonb
-- equality: key order and spacing do not matter).
SELECT (l.result IS NOT DISTINCT FROM sqlc.narg('result')::jsonb)::boolean
FROM leases l
WHERE l.project_id = @project_id AND l.id = @lease_id;

-- name: CountRefusal :one
-- Counts a refused report and keeps it among the last five of its kind; the
-- caller keeps an observation only for the first few of each kind.
INSERT INTO lease_refusals (project_id, lease_id, kind, calls, last_operation, last_at, recent)
VALUES (@project_id, @lease_id, @kind, 1, @operation, coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()),
        jsonb_build_array(jsonb_build_object(
            'call', 1,
            'epoch', sqlc.arg('epoch')::bigint,
            'operation', sqlc.arg('operation')::text,
            'received_at', coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()),
            'worker_time', sqlc.narg('worker_time')::timestamptz,
            'payload', sqlc.narg('payload')::jsonb)))
ON CONFLICT (project_id, lease_id, kind) DO UPDATE
SET calls = lease_refusals.calls + 1,
    last_operation = excluded.last_operation,
    last_at = excluded.last_at,
    recent = (SELECT coalesce(jsonb_agg(t.e ORDER BY t.n), '[]'::jsonb)
              FROM jsonb_array_elements(
                       jsonb_set(excluded.recent, '{0,call}', to_jsonb(lease_refusals.calls + 1))
                       || lease_refusals.recent) WITH ORDINALITY AS t(e, n)
              WHERE t.n <= 5)
RETURNING calls;

-- name: InsertObservation :exec
INSERT INTO lease_observations (project_id, lease_id, epoch, kind, operation, received_at, worker_time, payload)
VALUES (@project_id, @lease_id, @epoch, @kind, @operation,
        coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()), sqlc.narg('worker_time'), sqlc.narg('payload'));

-- name: ListObservations :many
-- A lease's refused reports in the order they were received, after the
-- keyset (@after_at, @after_tb), at most @max_rows: the observations kept
-- (the first @kept calls of each kind) and the later calls that
-- lease_refusals.recent still holds (with the nil id: they have none). tb
-- breaks ties of received_at: an observation's seq, a later call's
-- -(2 * call + 1 for stale_call), unique within the lease.
SELECT o.received_at, o.tb::bigint AS tb, o.id, o.epoch, o.kind, o.operation, o.worker_time, o.payload
FROM (
    SELECT lo.received_at, lo.seq AS tb, lo.id, lo.epoch, lo.kind, lo.operation, lo.worker_time, lo.payload
    FROM lease_observations lo
    WHERE lo.project_id = @project_id AND lo.lease_id = @lease_id
    UNION ALL
    SELECT (e->>'received_at')::timestamptz, -(2 * (e->>'call')::bigint + (r.kind = 'stale_call')::int),
           '00000000-0000-0000-0000-000000000000'::uuid, (e->>'epoch')::bigint, r.kind, e->>'operation',
           (e->>'worker_time')::timestamptz, nullif(e->'payload', 'null'::jsonb)
    FROM lease_refusals r, jsonb_array_elements(r.recent) e
    WHERE r.project_id = @project_id AND r.lease_id = @lease_id AND (e->>'call')::int > sqlc.arg('kept')::int
) o
WHERE (o.received_at, o.tb) > (sqlc.arg('after_at')::timestamptz, sqlc.arg('after_tb')::bigint)
ORDER BY o.received_at, o.tb
LIMIT @max_rows;

-- name: LeaseHistory :many
-- Oldest first; @after_seq is the cursor (0 = from the start).
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
WHERE l.project_id = @project_id
  AND l.seq > @after_seq
  AND (sqlc.narg('item_id')::uuid IS NULL OR l.item_id = sqlc.narg('item_id')::uuid)
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR l.acquired_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR l.acquired_at < sqlc.narg('until')::timestamptz)
ORDER BY l.seq
LIMIT @max_rows;

-- name: LeaseHistoryNewest :many
-- LeaseHistory newest first; @before_seq is the cursor (the start: the
-- largest bigint).
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
WHERE l.project_id = @project_id
  AND l.seq < @before_seq
  AND (sqlc.narg('item_id')::uuid IS NULL OR l.item_id = sqlc.narg('item_id')::uuid)
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR l.acquired_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR l.acquired_at < sqlc.narg('until')::timestamptz)
ORDER BY l.seq DESC
LIMIT @max_rows;

-- name: ItemLeaseHistory :many
-- LeaseHistory of one item (History with an item: GET .../items/{id}/leases):
-- its leases in grant order, which is its epoch order, read from the
-- unique index (project_id, item_id, epoch) from the cursor's lease on
-- (@after_seq, the last row's seq; its epoch found by leases_history), so
-- a page reads its own rows however long the project's history. With the
-- item a parameter of LeaseHistory ("item_id IS NULL OR item_id = ..."),
-- a generic plan walked the project's history in grant order.
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
WHERE l.project_id = @project_id AND l.item_id = @item_id
  AND l.epoch > coalesce((SELECT c.epoch FROM leases c
                          WHERE c.project_id = @project_id AND c.seq = @after_seq AND c.item_id = @item_id), 0)
  AND l.seq > @after_seq
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
ORDER BY l.epoch
LIMIT @max_rows;

-- name: ItemLeaseHistoryNewest :many
-- ItemLeaseHistory newest first; @before_seq is the cursor (the start: the
-- largest bigint).
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
WHERE l.project_id = @project_id AND l.item_id = @item_id
  AND l.epoch < coalesce((SELECT c.epoch FROM leases c
                          WHERE c.project_id = @project_id AND c.seq = @before_seq AND c.item_id = @item_id),
                         9223372036854775807)
  AND l.seq < @before_seq
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
ORDER BY l.epoch DESC
LIMIT @max_rows;

-- name: ItemLeaseHistoryAcquired :many
-- LeaseHistoryAcquired of one item (same window, cursor and order): the
-- item's leases are its epochs 1..the last one's (max by the unique index
-- (project_id, item_id, epoch)), each looked up by that index (OFFSET 0
-- keeps the lookup per epoch, not flattened into a join), its row then by
-- leases_by_id (the project checked on the row found, IS NOT DISTINCT
-- FROM: not an index condition), then sorted, so a page costs the item's
-- leases, never the project's. Written as one scan of the item's leases
-- ordered as the page asks, a generic plan walked the project's window in
-- leases_by_acquired (which holds that order) and tested each lease's
-- item: statistics taken before a project grew say nothing of how few
-- leases one of its items has (TestItemHistoryPageReadsTheItemsLeases).
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM unnest(ARRAY(SELECT generate_series(1::bigint,
         (SELECT max(m.epoch) FROM leases m WHERE m.project_id = @project_id AND m.item_id = @item_id)))) AS e(epoch)
CROSS JOIN LATERAL (
    SELECT x.id FROM leases x
    WHERE x.project_id = @project_id AND x.item_id = @item_id AND x.epoch = e.epoch
    OFFSET 0
) AS k
JOIN leases l ON l.id = k.id AND l.project_id IS NOT DISTINCT FROM @project_id::uuid
WHERE l.acquired_at >= greatest(@after_at::timestamptz, coalesce(sqlc.narg('since')::timestamptz, '-infinity'))
  AND l.acquired_at < coalesce(sqlc.narg('until')::timestamptz, 'infinity')
  AND (l.acquired_at > @after_at::timestamptz OR l.seq > @after_seq::bigint)
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
ORDER BY l.acquired_at, l.seq
LIMIT @max_rows;

-- name: ItemLeaseHistoryAcquiredNewest :many
-- ItemLeaseHistoryAcquired newest acquisition first
-- (LeaseHistoryAcquiredNewest of one item).
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM unnest(ARRAY(SELECT generate_series(1::bigint,
         (SELECT max(m.epoch) FROM leases m WHERE m.project_id = @project_id AND m.item_id = @item_id)))) AS e(epoch)
CROSS JOIN LATERAL (
    SELECT x.id FROM leases x
    WHERE x.project_id = @project_id AND x.item_id = @item_id AND x.epoch = e.epoch
    OFFSET 0
) AS k
JOIN leases l ON l.id = k.id AND l.project_id IS NOT DISTINCT FROM @project_id::uuid
WHERE l.acquired_at >= coalesce(sqlc.narg('since')::timestamptz, '-infinity')
  AND l.acquired_at <= least(@before_at::timestamptz, coalesce(sqlc.narg('until')::timestamptz, 'infinity'))
  AND l.acquired_at < coalesce(sqlc.narg('until')::timestamptz, 'infinity')
  AND (l.acquired_at < @before_at::timestamptz OR l.seq < @before_seq::bigint)
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
ORDER BY l.acquired_at DESC, l.seq DESC
LIMIT @max_rows;

-- name: ItemLeaseHistoryByDuration :many
-- LeaseHistoryByDuration of one item: its leases read from (project_id,
-- item_id, epoch) and sorted, so a page costs the item's leases.
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals,
       ((extract(epoch FROM coalesce(l.ended_at, coalesce(sqlc.narg('now')::timestamptz, now())) - l.acquired_at)
        * 1000000)::bigint * @dir::bigint)::bigint AS sort_value
FROM leases l
WHERE l.project_id = @project_id AND l.item_id = @item_id
  AND ((extract(epoch FROM coalesce(l.ended_at, coalesce(sqlc.narg('now')::timestamptz, now())) - l.acquired_at)
        * 1000000)::bigint * @dir::bigint, l.seq * @dir::bigint) > (@after_value::bigint, @after_seq::bigint)
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR l.acquired_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR l.acquired_at < sqlc.narg('until')::timestamptz)
ORDER BY sort_value, l.seq * @dir::bigint
LIMIT @max_rows;

-- name: ItemLeasesBefore :many
-- An item's leases newest first, those granted before epoch @before_epoch
-- (the start: the largest bigint), at most @max_rows: the unique index
-- (project_id, item_id, epoch) read backwards from the cursor, so a page
-- reads its own rows only, however often the item was claimed.
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
WHERE l.project_id = @project_id AND l.item_id = @item_id AND l.epoch < @before_epoch
ORDER BY l.epoch DESC
LIMIT @max_rows;

-- name: CountItemLeases :one
-- How many leases the item has had, without reading them: its epoch. Only
-- a claim increments it (ClaimItem, ClaimItemDirect, ClaimItems), in the
-- statement that records the lease at the new epoch, so the item's leases
-- are its epochs 1..epoch. 0 for an item not in the project.
SELECT coalesce((SELECT i.epoch FROM items i WHERE i.project_id = @project_id AND i.id = @item_id), 0)::bigint;

-- name: LeaseHistoryAcquired :many
-- The leases acquired in [@since, @until) (a bound left NULL is open),
-- oldest acquisition first, ties in grant order: History's orders by grant
-- when the page names a time window. The range is read from
-- leases_by_acquired (project_id, acquired_at, seq; migration 00054) in
-- order, so a page costs its own rows whatever the history around the
-- window holds; LeaseHistory's walk in grant order skips every lease
-- before the window (a recent window of a long history: the whole
-- history), and which of the two PostgreSQL chooses for LeaseHistory
-- depends on estimates that cannot see where a project's recent leases
-- are. The cursor is the last row's (acquired_at, seq): (@after_at,
-- @after_seq); the first page passes '-infinity'.
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
WHERE l.project_id = @project_id
  AND l.acquired_at >= greatest(@after_at::timestamptz, coalesce(sqlc.narg('since')::timestamptz, '-infinity'))
  AND l.acquired_at < coalesce(sqlc.narg('until')::timestamptz, 'infinity')
  -- The rest of the keyset, apart: as a row comparison it would be an
  -- index condition of its own, from which the scan could start instead
  -- of from the bound above.
  AND (l.acquired_at > @after_at::timestamptz OR l.seq > @after_seq::bigint)
  AND (sqlc.narg('item_id')::uuid IS NULL OR l.item_id = sqlc.narg('item_id')::uuid)
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
ORDER BY l.acquired_at, l.seq
LIMIT @max_rows;

-- name: LeaseHistoryAcquiredNewest :many
-- LeaseHistoryAcquired newest acquisition first; the cursor is the last
-- row's (acquired_at, seq): (@before_at, @before_seq); the first page
-- passes 'infinity'.
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
WHERE l.project_id = @project_id
  AND l.acquired_at >= coalesce(sqlc.narg('since')::timestamptz, '-infinity')
  AND l.acquired_at <= least(@before_at::timestamptz, coalesce(sqlc.narg('until')::timestamptz, 'infinity'))
  AND l.acquired_at < coalesce(sqlc.narg('until')::timestamptz, 'infinity')
  AND (l.acquired_at < @before_at::timestamptz OR l.seq < @before_seq::bigint)
  AND (sqlc.narg('item_id')::uuid IS NULL OR l.item_id = sqlc.narg('item_id')::uuid)
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
ORDER BY l.acquired_at DESC, l.seq DESC
LIMIT @max_rows;

-- name: LeaseHistoryByDuration :many
-- LeaseHistory by how long each lease ran (a live one: so far, by the
-- database clock), shortest first for @dir 1 and longest first for -1,
-- ties in grant order the same way. sort_value is the row's keyset value
-- (in microseconds, multiplied by @dir); the cursor is the last row's
-- (sort_value, seq * @dir).
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals,
       ((extract(epoch FROM coalesce(l.ended_at, coalesce(sqlc.narg('now')::timestamptz, now())) - l.acquired_at)
        * 1000000)::bigint * @dir::bigint)::bigint AS sort_value
FROM leases l
WHERE l.project_id = @project_id
  AND ((extract(epoch FROM coalesce(l.ended_at, coalesce(sqlc.narg('now')::timestamptz, now())) - l.acquired_at)
        * 1000000)::bigint * @dir::bigint, l.seq * @dir::bigint) > (@after_value::bigint, @after_seq::bigint)
  AND (sqlc.narg('item_id')::uuid IS NULL OR l.item_id = sqlc.narg('item_id')::uuid)
  AND (sqlc.narg('worker')::text IS NULL OR l.worker = sqlc.narg('worker')::text)
  AND (sqlc.narg('outcome')::text IS NULL OR l.outcome = sqlc.narg('outcome')::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR l.acquired_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR l.acquired_at < sqlc.narg('until')::timestamptz)
ORDER BY sort_value, l.seq * @dir::bigint
LIMIT @max_rows;

-- name: ActiveLeases :many
SELECT sqlc.embed(l),
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
WHERE l.project_id = @project_id AND l.ended_at IS NULL
ORDER BY l.acquired_at, l.seq;

-- name: WorkerOutcomes :many
-- Per worker and outcome ('' for active leases): how many leases, and the
-- latest instant the worker was heard from. Ended leases come from their
-- counters (worker_outcome_counts, kept by triggers; migration 00019), live
-- ones from the partial index of live leases: the cost follows the number
-- of workers and live leases, not the length of the history.
SELECT worker, outcome, leases::int AS leases, last_seen
FROM (
    SELECT c.worker, c.outcome, c.leases, c.last_seen
    FROM worker_outcome_counts c
    WHERE c.project_id = @project_id
    UNION ALL
    SELECT l.worker, ''::text, count(*), max(greatest(l.acquired_at, l.heartbeat_at))
    FROM leases l
    WHERE l.project_id = @project_id AND l.ended_at IS NULL
    GROUP BY l.worker
) AS w
ORDER BY worker, outcome;

-- name: CountActiveLeases :one
-- The workers badge: leases of a project that have not ended.
SELECT count(*) FROM leases
WHERE project_id = @project_id AND ended_at IS NULL;

-- name: ClaimHopeless :one
-- After a claim found nothing: whether the project has ready items, and
-- whether any of them requires only capabilities among @capabilities. Ready
-- items none of which match say the claim can never be answered as asked.
-- (Each probe reads the claim index in its order; see ClaimNeedsTx. An item
-- that requires nothing matches any claim: items_ready_unrestricted,
-- migration 00104, has the first of them; wg_requires_met, migration 00113,
-- asks each distinct requires of the others once, not each item.)
-- Items in backoff are ready and count (items_backoff, migration 00141);
-- whether one of them requires nothing is the first entry of
-- items_backoff_requires (00160: '{}' is the least text[]). So do the
-- items a live lease's scopes hold (items_scope_held, migration 00167).
SELECT ((SELECT true FROM items i WHERE i.project_id = @project_id AND i.ready AND NOT i.in_backoff
         AND NOT i.scope_held
         ORDER BY i.priority DESC, i.seq LIMIT 1) IS NOT NULL
        OR (SELECT true FROM items b WHERE b.project_id = @project_id AND b.ready AND b.in_backoff
            ORDER BY b.not_before LIMIT 1) IS NOT NULL
        OR (SELECT true FROM items h WHERE h.project_id = @project_id AND h.scope_held AND h.ready
            LIMIT 1) IS NOT NULL)::bool AS any_ready,
       ((SELECT true FROM items i
         WHERE i.project_id = @project_id AND i.ready AND NOT i.in_backoff AND NOT i.scope_held
           AND i.requires = '{}'
         ORDER BY i.priority DESC, i.seq LIMIT 1) IS NOT NULL
        OR (SELECT true FROM items h
            WHERE h.project_id = @project_id AND h.scope_held AND h.ready AND h.requires = '{}'
            LIMIT 1) IS NOT NULL
        OR (SELECT b.requires FROM items b
            WHERE b.project_id = @project_id AND b.ready AND b.in_backoff
            ORDER BY b.requires LIMIT 1) IS NOT DISTINCT FROM '{}'::text[]
        OR wg_requires_met(@project_id, @capabilities::text[]))::bool AS any_match;

-- name: RecordOffer :exec
-- Records the capabilities a worker offered in a claim, when they differ
-- from the stored ones or those are older than a minute (otherwise the
-- statement writes nothing).
INSERT INTO worker_offers AS o (project_id, worker, capabilities, offered_at)
VALUES (@project_id, @worker, @capabilities::text[], coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
ON CONFLICT (project_id, worker) DO UPDATE
SET capabilities = excluded.capabilities, offered_at = excluded.offered_at
WHERE o.capabilities <> excluded.capabilities OR o.offered_at < excluded.offered_at - interval '1 minute';

-- name: UnofferedCapabilities :many
-- Those of @capabilities that no worker offered in a claim within the last
-- @window_ms milliseconds, nor offered last while it holds a live lease of
-- the project, not past its expiry (busy on a task longer than the window:
-- it claims again when done), by the database clock or the given now.
SELECT c::text AS capability
FROM unnest(@capabilities::text[]) AS c
WHERE NOT EXISTS (
    SELECT 1 FROM worker_offers o
    WHERE o.project_id = @project_id AND c = ANY(o.capabilities)
      AND (o.offered_at >= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
                           - sqlc.arg('window_ms')::bigint * interval '1 millisecond'
           OR EXISTS (SELECT 1 FROM leases l
                      WHERE l.project_id = o.project_id AND l.worker = o.worker AND l.ended_at IS NULL
                        AND l.expires_at > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))))
ORDER BY 1;


-- name: MissingCapabilities :many
-- The capabilities ready items of the project require that are not among
-- @capabilities (for a claim that can match nothing), at most 20. For a
-- claim with @labels they are those of the ready items that carry the
-- labels (the first 1,000, by items_ready_labels), which the claim would
-- take but for their requires: the other items' requires would not help
-- it. For a claim without labels, or when no ready item carries them
-- (then the labels are not the claim's only trouble), they are read from
-- the distinct requires of the ready items (wg_ready_requires, migration
-- 00113: one index descent per distinct value, not one row per item), the
-- first 1,000 of them, and from the distinct requires of the ready items
-- in a retry backoff, the first 1,000 of them too (wg_backoff_requires,
-- migration 00160: the claim indexes, which wg_ready_requires reads, hold
-- none of them). The labelled items are those out of a backoff, the ones
-- items_ready_labels holds (migration 00162).
WITH labelled AS (
    SELECT l.requires FROM items l
    WHERE cardinality(@labels::text[]) > 0 AND l.project_id = @project_id AND l.ready AND NOT l.in_backoff
      AND l.labels <> '{}' AND l.labels @> @labels::text[] AND l.requires <> '{}'
    LIMIT 1000
)
SELECT DISTINCT r::text AS capability
FROM (SELECT requires FROM labelled
      UNION
      SELECT s.requires FROM wg_ready_requires(@project_id, 999) AS s (requires)
      WHERE NOT EXISTS (SELECT FROM labelled)
      UNION
      SELECT b.requires FROM wg_backoff_requires(@project_id, 1000) AS b (requires)
      WHERE NOT EXISTS (SELECT FROM labelled)
      UNION
      -- The items a live lease's scopes hold (items_scope_held, 00167).
      SELECT h.requires FROM items h
      WHERE h.project_id = @project_id AND h.scope_held AND h.ready AND h.requires <> '{}'
        AND NOT EXISTS (SELECT FROM labelled)) AS s,
     unnest(s.requires) AS r
WHERE NOT (r = ANY(@capabilities::text[]))
ORDER BY 1
LIMIT 20;

-- name: WorkerNamesPage :many
-- A page of the project's worker labels (every worker that ever held a
-- lease: each has rows in leases, kept forever) after @after, in order:
-- a skip scan of leases_by_worker, one index descent per name, so a page
-- costs its own size whatever the number of workers or of their leases.
WITH RECURSIVE w(worker, n) AS (
    (SELECT l.worker, 1 FROM leases l
     WHERE l.project_id = @project_id AND l.worker > @after::text
     ORDER BY l.worker LIMIT 1)
    UNION ALL
    SELECT (SELECT l.worker FROM leases l
            WHERE l.project_id = @project_id AND l.worker > w.worker
            ORDER BY l.worker LIMIT 1), w.n + 1
    FROM w
    WHERE w.worker IS NOT NULL AND w.n < @max_rows::int
)
SELECT w.worker::text AS worker FROM w WHERE w.worker IS NOT NULL ORDER BY w.worker;

-- name: WorkerOutcomesOf :many
-- WorkerOutcomes of the named workers only: their counter rows (primary
-- key) and their live leases (leases_live_by_worker, migration 00101).
SELECT worker, outcome, leases::int AS leases, last_seen
FROM (
    SELECT c.worker, c.outcome, c.leases, c.last_seen
    FROM worker_outcome_counts c
    WHERE c.project_id = @project_id AND c.worker = ANY(@workers::text[])
    UNION ALL
    SELECT l.worker, ''::text, count(*), max(greatest(l.acquired_at, l.heartbeat_at))
    FROM leases l
    WHERE l.project_id = @project_id AND l.ended_at IS NULL AND l.worker = ANY(@workers::text[])
    GROUP BY l.worker
) AS w
ORDER BY worker, outcome;

-- name: WorkerUsageOf :many
-- WorkerUsage of the named workers only (primary key).
SELECT worker, tokens_in, tokens_out, cost_micro_usd, tool_calls
FROM worker_usage
WHERE project_id = @project_id AND worker = ANY(@workers::text[])
ORDER BY worker;

-- name: LiveLeasesOfWorkers :many
-- The live leases of the named workers (leases_live_by_worker), by worker
-- then claim order, at most @max_rows, each with its liveness rank as
-- LiveLeasesPage judges it.
SELECT sqlc.embed(l),
       coalesce(l.progress_at, l.acquired_at)::timestamptz AS last_activity,
       v.rank::int AS rank,
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
JOIN projects p ON p.id = l.project_id
CROSS JOIN (SELECT coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()) AS at) AS t
CROSS JOIN LATERAL (SELECT wg_lease_liveness(l.expires_at, l.heartbeat_at, l.acquired_at, l.progress_at, p.quiet_after_ms, t.at) AS rank) AS v
WHERE l.project_id = @project_id AND l.ended_at IS NULL AND l.worker = ANY(@workers::text[])
ORDER BY l.worker, l.seq
LIMIT @max_rows;

-- name: ClaimSearchesPastHead :one
-- Whether a claim with these capabilities would search past the head of
-- the claim order (wg_capability_branches, migration 00113: none of the
-- first 64 ready items is one it can take, so it reads the items of the
-- requires it meets instead of walking). A batch claim then takes its
-- items by the single claim's statement, which searches that way, rather
-- than by ClaimItems, which would walk every ready item it cannot take.
SELECT (cardinality(coalesce(sqlc.narg('capabilities')::text[], '{}')) > 0
        AND wg_capability_branches(@project_id, @labels::text[], sqlc.narg('capabilities')::text[]) IS NOT NULL)::bool AS past_head;

-- name: NextDueItems :many
-- The project's next ready items that a claim can take from an instant on
-- without a write that notifies: the end of a retry backoff (items_backoff,
-- 00141) and the end of a continuity reservation window
-- (items_reservation_end, 00156), after the floor, earliest first (ties by
-- item id), with the labels and the reservation that hold at that instant
-- (the workgraph_ready payload's). The floor is (@after, @after_id), the
-- last item already turned into an event, unless the statement's instant
-- less @lookback_secs is later (then every item due strictly after that
-- instant); a NULL @lookback_secs is none. Keyed by item id too (00161),
-- so that the items due at one instant beyond the first @max_items come in
-- the next read, which starts right after the last one. Each side is one
-- range read at the front of its index: the floor is written out in each
-- (as a CTE it would be a filter, and the reservation side would read
-- every window that ended long ago: preferred_until stays set). now is
-- the database's instant of the same statement, so the caller can wait
-- the difference on its own clock.
WITH backoff AS (
    SELECT i.id, i.not_before AS due, i.labels,
           CASE WHEN i.preferred_worker IS NOT NULL AND coalesce(i.preferred_until > i.not_before, true)
                THEN i.preferred_worker END AS worker,
           CASE WHEN i.preferred_worker IS NOT NULL AND coalesce(i.preferred_until > i.not_before, true)
                THEN i.preferred_token END AS token
    FROM items i
    WHERE i.project_id = @project_id AND i.ready AND i.in_backoff
      AND (i.not_before, i.id) >
          (coalesce(greatest(sqlc.narg('after')::timestamptz,
                             statement_timestamp() - make_interval(secs => sqlc.narg('lookback_secs')::float8)),
                    '-infinity'),
           CASE WHEN sqlc.narg('lookback_secs')::float8 IS NULL
                     OR sqlc.narg('after')::timestamptz
                        >= statement_timestamp() - make_interval(secs => sqlc.narg('lookback_secs')::float8)
                THEN @after_id::uuid
                ELSE 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid END)
    ORDER BY i.not_before, i.id
    LIMIT @max_items
), reserved AS (
    SELECT i.id, i.preferred_until AS due, i.labels, NULL::text AS worker, NULL::uuid AS token
    FROM items i
    WHERE i.project_id = @project_id AND i.ready AND i.preferred_until IS NOT NULL
      AND (i.preferred_until, i.id) >
          (coalesce(greatest(sqlc.narg('after')::timestamptz,
                             statement_timestamp() - make_interval(secs => sqlc.narg('lookback_secs')::float8)),
                    '-infinity'),
           CASE WHEN sqlc.narg('lookback_secs')::float8 IS NULL
                     OR sqlc.narg('after')::timestamptz
                        >= statement_timestamp() - make_interval(secs => sqlc.narg('lookback_secs')::float8)
                THEN @after_id::uuid
                ELSE 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid END)
      AND (i.not_before IS NULL OR i.not_before <= i.preferred_until)
    ORDER BY i.preferred_until, i.id
    LIMIT @max_items
)
SELECT d.id::uuid AS id, d.due::timestamptz AS due, d.labels::text[] AS labels,
       (d.worker IS NOT NULL)::boolean AS reserved, coalesce(d.worker, '')::text AS worker,
       (d.token IS NOT NULL)::boolean AS has_token, coalesce(d.token, '00000000-0000-0000-0000-000000000000')::uuid AS token,
       statement_timestamp()::timestamptz AS now
FROM (SELECT * FROM backoff UNION ALL SELECT * FROM reserved) d
ORDER BY d.due, d.id
LIMIT @max_items;
