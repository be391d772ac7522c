-- name: InsertAttention :one
-- created_at is this statement's database clock, not its transaction's
-- start: a request opened because a lease ended (repeated failure or
-- expiry) is created after the lease's ended_at.
INSERT INTO attention_requests (project_id, item_id, lease_id, epoch, source, reason, requested_by,
                                question, suggested_answers, context, blocking, created_at)
VALUES (@project_id, @item_id, sqlc.narg('lease_id'), sqlc.narg('epoch'), @source, @reason, @requested_by,
        @question, @suggested_answers::text[], sqlc.narg('context'), @blocking,
        coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
RETURNING *;

-- name: HoldItemForAttention :one
-- A blocking request opened on an open item: it waits until the request is
-- answered. @worker (may be '') is the worker whose lease ended for the
-- request and @worker_token the token that lease was granted to; together
-- they become the item's pending continuity preference, whose window
-- starts when the last blocking request is resolved. A request without a
-- worker keeps a pending preference and drops an old window.
UPDATE items
SET open_attention = open_attention + 1,
    preferred_worker = CASE
        WHEN @worker::text <> '' THEN @worker::text
        WHEN preferred_until IS NULL THEN preferred_worker
        ELSE NULL END,
    preferred_token = CASE
        WHEN @worker::text <> '' THEN sqlc.narg('worker_token')::uuid
        WHEN preferred_until IS NULL THEN preferred_token
        ELSE NULL END,
    preferred_until = NULL,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE project_id = @project_id AND id = @item_id AND status = 'open'
RETURNING title;

-- name: ItemForAttention :one
SELECT title, status FROM items
WHERE project_id = @project_id AND id = @item_id;

-- name: CloseAttention :one
-- Resolves or dismisses an open request, once, stamped by the statement's
-- database clock (not later than the continuity window's start). @decision
-- is the choice that resolves an uncertain_outcome request (NULL
-- otherwise; the table refuses one on any other request).
UPDATE attention_requests
SET state = @state,
    answer = sqlc.narg('answer'),
    decision = sqlc.narg('decision'),
    resolved_by = @resolved_by,
    resolved_at = coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
WHERE project_id = @project_id AND id = @id AND state = 'open'
RETURNING *;

-- name: ReleaseItemFromAttention :one
-- One blocking request of the item is closed. When it was the last one the
-- item's readiness comes back (the generated column "ready") and a pending
-- continuity preference gets its window, from the moment this statement
-- holds the item (the database clock, not the transaction's start: the
-- window is never shortened by latency).
UPDATE items
SET open_attention = open_attention - 1,
    preferred_until = CASE
        WHEN open_attention = 1 AND preferred_worker IS NOT NULL
        THEN coalesce(sqlc.narg('now')::timestamptz, clock_timestamp()) + sqlc.arg('window_ms')::bigint * interval '1 millisecond'
        ELSE preferred_until END,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE project_id = @project_id AND id = @item_id
RETURNING open_attention;

-- name: GetAttention :one
SELECT sqlc.embed(r), i.title AS item_title
FROM attention_requests r
JOIN items i ON i.project_id = r.project_id AND i.id = r.item_id
WHERE r.project_id = @project_id AND r.id = @id;

-- name: AttentionState :one
SELECT state, answer, reason FROM attention_requests
WHERE project_id = @project_id AND id = @id;

-- name: AttentionProject :one
SELECT project_id FROM attention_requests WHERE id = @id;

-- name: ListAttention :many
-- Oldest first; @after_seq is the cursor (0 = from the start). The item's
-- title is looked up per request (a correlated subquery, one primary-key
-- lookup each): as a join, a planner whose statistics predate a project's
-- growth may walk all of its items instead (see
-- TestGraphJoinsDoNotTrustStaleProjectStatistics).
SELECT sqlc.embed(r),
       (SELECT i.title FROM items i WHERE i.project_id = r.project_id AND i.id = r.item_id)::text AS item_title
FROM attention_requests r
WHERE r.project_id = @project_id
  AND r.seq > @after_seq
  AND (sqlc.narg('state')::text IS NULL OR r.state = sqlc.narg('state')::text)
  AND (sqlc.narg('item_id')::uuid IS NULL OR r.item_id = sqlc.narg('item_id')::uuid)
ORDER BY r.seq
LIMIT @max_rows;

-- name: AttentionForItem :many
SELECT sqlc.embed(r), i.title AS item_title
FROM attention_requests r
JOIN items i ON i.project_id = r.project_id AND i.id = r.item_id
WHERE r.project_id = @project_id AND r.item_id = @item_id
ORDER BY r.seq;

-- name: ClosedNonBlockingForLease :many
-- The answered (or dismissed) non-blocking requests a lease's worker asked;
-- titles as in ListAttention.
SELECT sqlc.embed(r),
       (SELECT i.title FROM items i WHERE i.project_id = r.project_id AND i.id = r.item_id)::text AS item_title
FROM attention_requests r
WHERE r.project_id = @project_id AND r.lease_id = @lease_id
  AND NOT r.blocking AND r.state <> 'open'
ORDER BY r.seq;

-- name: CountOpenAttention :one
-- The inbox badge: open requests of a project.
SELECT count(*) FROM attention_requests
WHERE project_id = @project_id AND state = 'open';
