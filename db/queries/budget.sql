-- Budgets, usage and progress (migration 00035). Owned by package lease.

-- name: LockBudgetItem :one
-- Holds the item a budget is set on for the rest of the transaction.
SELECT id FROM items WHERE project_id = @project_id AND id = @item_id FOR UPDATE;

-- name: UpsertBudget :one
-- Sets an item's budget limits (NULL: no limit). A new budget starts its
-- wall time now; inserted says whether the budget is new (its ledger must
-- then be filled from the subtree's past leases).
INSERT INTO budgets AS b (project_id, item_id, max_tokens, max_cost_micro_usd, max_wall_ms, max_depth,
                          started_at, updated_at)
VALUES (@project_id, @item_id, sqlc.narg('max_tokens'), sqlc.narg('max_cost_micro_usd'),
        sqlc.narg('max_wall_ms'), sqlc.narg('max_depth'),
        coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()),
        coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
ON CONFLICT (project_id, item_id) DO UPDATE
SET max_tokens = EXCLUDED.max_tokens,
    max_cost_micro_usd = EXCLUDED.max_cost_micro_usd,
    max_wall_ms = EXCLUDED.max_wall_ms,
    max_depth = EXCLUDED.max_depth,
    updated_at = EXCLUDED.updated_at
RETURNING (xmax = 0)::boolean AS inserted;

-- name: AddBudgetRootToItems :execrows
-- Puts every item of the subtree of @item_id under its budget. Its own
-- statement, before AddBudgetRootToLeases: it waits for the claims that
-- hold these items, so the next statement sees their leases. A child
-- whose creator held its parent (lockParent) while this statement's
-- snapshot was taken is not seen; the caller runs it again until it
-- changes nothing (lease.SetBudget).
UPDATE items i
SET budget_roots = i.budget_roots || @item_id::uuid
WHERE i.project_id = @project_id
  AND i.id IN (SELECT s.id FROM item_subtree(@project_id, @item_id) s)
  AND NOT (@item_id::uuid = ANY (i.budget_roots));

-- name: AddBudgetRootToLeases :exec
-- Puts the live leases of the subtree under the budget, so their next
-- usage is charged to it (and locks them until the ledger is filled).
UPDATE leases l
SET budget_roots = l.budget_roots || @item_id::uuid
FROM items i
WHERE l.project_id = @project_id AND l.ended_at IS NULL
  AND i.project_id = l.project_id AND i.id = l.item_id
  AND @item_id::uuid = ANY (i.budget_roots)
  AND NOT (@item_id::uuid = ANY (l.budget_roots));

-- name: FillBudget :exec
-- A new budget's ledger: the usage of every lease of its subtree so far.
UPDATE budgets b
SET tokens_in = u.tokens_in, tokens_out = u.tokens_out,
    cost_micro_usd = u.cost_micro_usd, tool_calls = u.tool_calls
FROM (SELECT coalesce(sum(l.tokens_in), 0)::bigint AS tokens_in,
             coalesce(sum(l.tokens_out), 0)::bigint AS tokens_out,
             coalesce(sum(l.cost_micro_usd), 0)::bigint AS cost_micro_usd,
             coalesce(sum(l.tool_calls), 0)::bigint AS tool_calls
      FROM leases l
      WHERE l.project_id = @project_id
        AND l.item_id IN (SELECT s.id FROM item_subtree(@project_id, @item_id) s)) AS u
WHERE b.project_id = @project_id AND b.item_id = @item_id;

-- name: GetBudget :one
SELECT sqlc.embed(b), budget_spent(b, coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())) AS spent
FROM budgets b
WHERE b.project_id = @project_id AND b.item_id = @item_id;

-- name: SpentBudgets :many
-- Which of @roots are spent, and whether each has its request yet.
SELECT b.item_id, b.request_id
FROM budgets b
WHERE b.project_id = @project_id AND b.item_id = ANY (@roots::uuid[])
  AND budget_spent(b, coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()));

-- name: LockSpentBudgetUnasked :one
-- Holds a spent budget that has no request yet (wall_ran_out: whether its
-- wall time is what ran out, by the rule of budget_spent). Of two transactions that
-- try at once, the second waits and then finds request_id set: one request.
SELECT b.item_id, b.max_tokens, b.max_cost_micro_usd, b.max_wall_ms,
       b.tokens_in, b.tokens_out, b.cost_micro_usd,
       (b.max_wall_ms IS NOT NULL
        AND b.started_at + b.max_wall_ms * interval '1 millisecond'
            <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))::boolean AS wall_ran_out
FROM budgets b
WHERE b.project_id = @project_id AND b.item_id = @item_id
  AND b.request_id IS NULL
  AND budget_spent(b, coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
FOR UPDATE;

-- name: SetBudgetRequest :exec
UPDATE budgets SET request_id = sqlc.narg('request_id')
WHERE project_id = @project_id AND item_id = @item_id;

-- name: ItemUsage :one
-- An item's own usage (its leases) and its subtree's (computed on read:
-- the walk follows items_by_parent over the subtree, read only by the item
-- page and its API, never by a heartbeat).
SELECT coalesce(sum(l.tokens_in) FILTER (WHERE l.item_id = @item_id), 0)::bigint AS own_tokens_in,
       coalesce(sum(l.tokens_out) FILTER (WHERE l.item_id = @item_id), 0)::bigint AS own_tokens_out,
       coalesce(sum(l.cost_micro_usd) FILTER (WHERE l.item_id = @item_id), 0)::bigint AS own_cost_micro_usd,
       coalesce(sum(l.tool_calls) FILTER (WHERE l.item_id = @item_id), 0)::bigint AS own_tool_calls,
       coalesce(sum(l.tokens_in), 0)::bigint AS tokens_in,
       coalesce(sum(l.tokens_out), 0)::bigint AS tokens_out,
       coalesce(sum(l.cost_micro_usd), 0)::bigint AS cost_micro_usd,
       coalesce(sum(l.tool_calls), 0)::bigint AS tool_calls
FROM leases l
WHERE l.project_id = @project_id
  AND l.item_id IN (SELECT s.id FROM item_subtree(@project_id, @item_id) s);

-- name: WorkerUsage :many
SELECT worker, tokens_in, tokens_out, cost_micro_usd, tool_calls
FROM worker_usage
WHERE project_id = @project_id
ORDER BY worker;

-- name: ProjectsWithNoProgress :many
-- Projects with a no_progress policy and a live lease past it (the rule
-- of LockNoProgressLeases).
SELECT DISTINCT l.project_id
FROM leases l JOIN projects p ON p.id = l.project_id
WHERE l.ended_at IS NULL AND p.no_progress_after_ms IS NOT NULL
  AND l.expires_at > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
  AND l.heartbeat_at IS NOT NULL
  AND l.heartbeat_at + (l.expires_at - l.heartbeat_at) / 2 > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
  AND coalesce(l.progress_at, l.acquired_at) + p.no_progress_after_ms * interval '1 millisecond'
      <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
LIMIT @max_projects;

-- name: LockNoProgressLeases :many
-- Holds up to @max_leases live leases of the project that keep
-- heartbeating while their progress has not changed for the project's
-- no_progress_after (by the database clock). A lease that has not
-- heartbeated yet, or is stale (silent for half its TTL: LiveLeaseActivity),
-- is left to its expiry: it is not heartbeating. Leases another
-- transaction holds are skipped.
SELECT l.*, p.no_progress_after_ms::bigint AS no_progress_after_ms
FROM leases l JOIN projects p ON p.id = l.project_id
WHERE l.project_id = @project_id AND l.ended_at IS NULL AND p.no_progress_after_ms IS NOT NULL
  AND l.expires_at > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
  AND l.heartbeat_at IS NOT NULL
  AND l.heartbeat_at + (l.expires_at - l.heartbeat_at) / 2 > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
  AND coalesce(l.progress_at, l.acquired_at) + p.no_progress_after_ms * interval '1 millisecond'
      <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
ORDER BY l.acquired_at
LIMIT @max_leases
FOR UPDATE OF l SKIP LOCKED;

-- name: LiveLeaseActivity :many
-- The live leases of a project with how alive each looks by the database
-- clock: stale (past its expiry, or silent for more than half its TTL),
-- quiet (heartbeating, but its progress has not changed for the project's
-- quiet_after), else healthy (wg_lease_liveness, migration 00105). A lease
-- that has not heartbeated yet is not quiet: within half its TTL its first
-- heartbeat is not due. last_activity is the last progress change (the
-- claim, when none).
SELECT l.id, l.item_id, l.worker, l.epoch, l.acquired_at, l.heartbeat_at, l.expires_at, l.progress,
       coalesce(l.progress_at, l.acquired_at)::timestamptz AS last_activity,
       (ARRAY['stale', 'quiet', 'healthy'])[wg_lease_liveness(l.expires_at, l.heartbeat_at, l.acquired_at, l.progress_at, p.quiet_after_ms, t.at) + 1]::text AS liveness,
       l.tokens_in, l.tokens_out, l.cost_micro_usd, l.tool_calls
FROM leases l
JOIN projects p ON p.id = l.project_id
CROSS JOIN (SELECT coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()) AS at) AS t
WHERE l.project_id = @project_id AND l.ended_at IS NULL
ORDER BY l.acquired_at, l.seq;

-- name: LiveLeasesPage :many
-- A page of the project's live leases, those to look at first first:
-- stale (rank 0), quiet (1), then healthy (2), judged as LiveLeaseActivity
-- does, each rank in claim order (seq), after the keyset
-- (@after_rank, @after_seq). It reads the project's live leases (the
-- partial index of live leases) and returns a page of them, each with the
-- instant they were judged at (db_now: @now, or the statement's), which
-- the next chunk of the same page passes as @now, so a page judges all its
-- leases at one instant.
SELECT sqlc.embed(l),
       coalesce(l.progress_at, l.acquired_at)::timestamptz AS last_activity,
       v.rank::int AS rank,
       t.at::timestamptz AS db_now,
       coalesce((SELECT sum(r.calls) FROM lease_refusals r
                 WHERE r.project_id = l.project_id AND r.lease_id = l.id), 0)::int AS refusals
FROM leases l
JOIN projects p ON p.id = l.project_id
CROSS JOIN (SELECT coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()) AS at) AS t
CROSS JOIN LATERAL (SELECT wg_lease_liveness(l.expires_at, l.heartbeat_at, l.acquired_at, l.progress_at, p.quiet_after_ms, t.at) AS rank) AS v
WHERE l.project_id = @project_id AND l.ended_at IS NULL
  AND (v.rank, l.seq) > (@after_rank::int, @after_seq::bigint)
ORDER BY v.rank, l.seq
LIMIT @max_rows;

-- name: UnaskedSpentBudgets :many
-- Spent budgets without a request yet, across projects (a wall-time
-- budget runs out without any write; the sweeper opens their requests).
SELECT b.project_id, b.item_id
FROM budgets b
WHERE b.request_id IS NULL
  AND budget_spent(b, coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
  AND EXISTS (SELECT 1 FROM items i WHERE i.project_id = b.project_id AND i.id = b.item_id AND i.status = 'open')
ORDER BY b.project_id
LIMIT @max_budgets;
