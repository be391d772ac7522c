-- name: InsertAttention :one
-- created_at is this statement's database clock, not its transaction's
-- start: a request opened because a lease ended (repeated failure or
-- expiry) is created after the lease's ended_at.
-- due_at is created_at plus @due_ms, or for a worker's question (no
-- @due_ms) plus the project's attention_due_ms; NULL: no deadline.
INSERT INTO attention_requests (project_id, item_id, lease_id, epoch, source, reason, requested_by,
                                question, suggested_answers, context, blocking, created_at,
                                due_at, on_overdue, default_answer)
SELECT @project_id, @item_id, sqlc.narg('lease_id'), sqlc.narg('epoch'), @source, @reason, @requested_by,
       @question, @suggested_answers::text[], sqlc.narg('context'), @blocking, t.at,
       t.at + coalesce(sqlc.narg('due_ms')::bigint,
                       CASE WHEN @source::text = 'worker'
                            THEN (SELECT p.attention_due_ms FROM projects p WHERE p.id = @project_id) END)
              * interval '1 millisecond',
       sqlc.narg('on_overdue')::text, sqlc.narg('default_answer')::text
FROM (SELECT coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()) AS at) AS t
-- @max_open (NULL: no bound): inserts nothing when the lease already has
-- that many open non-blocking requests (a worker's questions; lease.Ask).
-- The count is this statement's snapshot: the caller holds the lease's row
-- lock (LockLease), so the asks of one lease run one after another, and a
-- later one's statement sees the earlier ones' requests. They are read from
-- attention_open_questions_by_lease (migration 00114): the lease's open
-- questions only, however many it asked before.
WHERE sqlc.narg('max_open')::int IS NULL
   OR (SELECT count(*)
       FROM (SELECT 1 FROM attention_requests o
             WHERE o.project_id = @project_id AND o.lease_id = sqlc.narg('lease_id')
               AND o.state = 'open' AND NOT o.blocking
             LIMIT sqlc.narg('max_open')::int) AS o) < sqlc.narg('max_open')::int
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

-- name: OpenHoldBy :one
-- The oldest open hold on the item placed by @requested_by. The caller
-- holds the item's row lock (LockItem): every blocking request is opened
-- under it, so no hold appears between this read and the caller's insert.
SELECT sqlc.embed(r), i.title AS item_title
FROM attention_requests r
JOIN items i ON i.project_id = r.project_id AND i.id = r.item_id
WHERE r.project_id = @project_id AND r.item_id = @item_id AND r.state = 'open'
  AND r.reason = 'hold' AND r.requested_by = @requested_by
ORDER BY r.seq
LIMIT 1;

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

-- name: ListInboxOverdueAttention :many
-- The first part of the inbox's order: the project's open requests past
-- their deadline (marked overdue by the deadline sweeper), oldest first,
-- after @after_seq (0 = from the start), at most @max_rows; shown before
-- the others however many older ones wait. Read from the partial index
-- attention_open_overdue (migration 00067). Titles as in ListAttention.
SELECT sqlc.embed(r),
       (SELECT i.title FROM items i WHERE i.project_id = r.project_id AND i.id = r.item_id)::text AS item_title
FROM attention_requests r
WHERE r.project_id = @project_id AND r.state = 'open' AND r.overdue_at IS NOT NULL
  AND r.seq > @after_seq
ORDER BY r.seq
LIMIT @max_rows;

-- name: ListInboxWaitingAttention :many
-- The second part of the inbox's order: the project's open requests not
-- overdue, oldest first, after @after_seq, at most @max_rows (index
-- attention_open, in order). Titles as in ListAttention.
SELECT sqlc.embed(r),
       (SELECT i.title FROM items i WHERE i.project_id = r.project_id AND i.id = r.item_id)::text AS item_title
FROM attention_requests r
WHERE r.project_id = @project_id AND r.state = 'open' AND r.overdue_at IS NULL
  AND r.seq > @after_seq
ORDER BY r.seq
LIMIT @max_rows;

-- name: AttentionForItem :many
-- A page of an item's requests, oldest first, after @after_seq (0 = from
-- the start), at most @max_rows: the index attention_by_item (project_id,
-- item_id, seq) read forwards from the cursor, so a page reads its own rows
-- only, however many requests the item has. Titles as in ListAttention.
SELECT sqlc.embed(r),
       (SELECT i.title FROM items i WHERE i.project_id = r.project_id AND i.id = r.item_id)::text AS item_title
FROM attention_requests r
WHERE r.project_id = @project_id AND r.item_id = @item_id AND r.seq > @after_seq
ORDER BY r.seq
LIMIT @max_rows;

-- name: AttentionForItemBefore :many
-- An item's requests newest first, those asked before @before_seq (the
-- start: the largest bigint), at most @max_rows: attention_by_item read
-- backwards from the cursor (the claim's bounded history, the item page).
-- Titles as in ListAttention.
SELECT sqlc.embed(r),
       (SELECT i.title FROM items i WHERE i.project_id = r.project_id AND i.id = r.item_id)::text AS item_title
FROM attention_requests r
WHERE r.project_id = @project_id AND r.item_id = @item_id AND r.seq < @before_seq
ORDER BY r.seq DESC
LIMIT @max_rows;

-- name: AttentionLatestOfItems :many
-- The newest requests of each item of @item_ids, per item newest first:
-- at most @max_rows of an item's, and none after one whose newer requests
-- already take more than @max_bytes between them. A request's bytes are a
-- lower bound of what it takes in an answer (attention.Request.Size): its
-- question, answer and context as text. So the statement returns what
-- attention.Service.Latest keeps of each item, and at most the one request
-- after: the histories of a batch claim's items in one statement, each
-- item's read backwards on attention_by_item as AttentionForItemBefore
-- reads one item's.
-- read_rows is how many requests the item's read held before the byte
-- cut (more than it returned: the item has older requests). Titles as in
-- ListAttention.
WITH newest AS (
    SELECT wanted.item_id, x.seq, x.bytes
    FROM unnest(@item_ids::uuid[]) AS wanted(item_id)
    CROSS JOIN LATERAL (
        SELECT a.seq,
               octet_length(a.question) + coalesce(octet_length(a.answer), 0)
                   + coalesce(octet_length(a.context::text), 0) AS bytes
        FROM attention_requests a
        WHERE a.project_id = @project_id AND a.item_id = wanted.item_id
        ORDER BY a.seq DESC
        LIMIT @max_rows
    ) AS x
), counted AS (
    SELECT newest.item_id, newest.seq,
           coalesce(sum(newest.bytes) OVER (PARTITION BY newest.item_id ORDER BY newest.seq DESC
                                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS bytes_before,
           count(*) OVER (PARTITION BY newest.item_id) AS read_rows
    FROM newest
)
SELECT sqlc.embed(r),
       (SELECT i.title FROM items i WHERE i.project_id = r.project_id AND i.id = r.item_id)::text AS item_title,
       counted.read_rows::int AS read_rows
FROM counted
JOIN attention_requests r ON r.project_id = @project_id AND r.item_id = counted.item_id AND r.seq = counted.seq
WHERE counted.bytes_before <= @max_bytes::bigint
ORDER BY r.item_id, r.seq DESC;

-- name: ClosedNonBlockingForLease :many
-- The answered (or dismissed) non-blocking requests a lease's worker asked,
-- newest first, at most @max_rows: attention_answers_by_lease (migration
-- 00116) read backwards, so a heartbeat reads these rows only, however
-- many the lease had answered. Titles as in ListAttention.
SELECT sqlc.embed(r),
       (SELECT i.title FROM items i WHERE i.project_id = r.project_id AND i.id = r.item_id)::text AS item_title
FROM attention_requests r
WHERE r.project_id = @project_id AND r.lease_id = @lease_id
  AND NOT r.blocking AND r.state <> 'open'
ORDER BY r.seq DESC
LIMIT @max_rows;

-- name: CountOpenAttention :one
-- The inbox badge: open requests of a project.
SELECT count(*) FROM attention_requests
WHERE project_id = @project_id AND state = 'open';

-- name: ProjectsWithOverdueAttention :many
-- The projects with open requests past their deadline not yet marked
-- overdue (the deadline sweeper): a cross-project scan of index
-- attention_due.
SELECT DISTINCT project_id
FROM attention_requests
WHERE state = 'open' AND overdue_at IS NULL AND due_at IS NOT NULL
  AND due_at <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
LIMIT @max_projects;

-- name: TakeOverdueAttention :many
-- Marks up to @max_rows open requests of a project whose deadline has
-- passed as overdue, once: rows another sweeper holds are skipped, and a
-- row another sweeper marked meanwhile no longer matches (overdue_at IS
-- NULL is rechecked on the locked row). A request whose policy is release
-- stops blocking in the same update (the caller frees its item).
WITH due AS (
    SELECT r.id, r.blocking AS was_blocking
    FROM attention_requests r
    WHERE r.project_id = @project_id AND r.state = 'open' AND r.overdue_at IS NULL
      AND r.due_at <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
    ORDER BY r.due_at
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED
)
UPDATE attention_requests r
SET overdue_at = coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()),
    blocking = CASE WHEN r.on_overdue = 'release' THEN false ELSE r.blocking END
FROM due
WHERE r.project_id = @project_id AND r.id = due.id AND r.overdue_at IS NULL
RETURNING sqlc.embed(r), due.was_blocking;

-- name: ReleaseItemFromOverdue :exec
-- A blocking request stopped blocking at its deadline (policy release):
-- one blocking request fewer, and when it was the last one the item goes
-- back to circulation for any worker (the continuity preference of the
-- worker that asked is dropped).
UPDATE items
SET open_attention = open_attention - 1,
    preferred_worker = CASE WHEN open_attention = 1 THEN NULL ELSE preferred_worker END,
    preferred_token = CASE WHEN open_attention = 1 THEN NULL ELSE preferred_token END,
    preferred_until = CASE WHEN open_attention = 1 THEN NULL ELSE preferred_until END,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
WHERE project_id = @project_id AND id = @item_id;

-- name: AnswerByDefault :one
-- Answers an overdue request with its default answer, by "system".
UPDATE attention_requests
SET state = 'resolved',
    answer = default_answer,
    answered_by_default = true,
    resolved_by = 'system',
    resolved_at = coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
WHERE project_id = @project_id AND id = @id AND state = 'open' AND default_answer IS NOT NULL
RETURNING *;

-- name: BudgetAwaitsRaise :one
-- Whether a spent budget still waits on this request: a budget_exhausted
-- request is closed by raising the budget (which forgets the request
-- first) or cancelling the item, never by an answer that would leave the
-- subtree stopped with nobody asked.
SELECT EXISTS (
    SELECT 1 FROM budgets
    WHERE project_id = @project_id AND request_id = @id::uuid
) AS awaits;
