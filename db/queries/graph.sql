-- Queries of package graph: items, dependencies, readiness counters and graph
-- traversals. Every time-dependent statement takes sqlc.narg('now') and falls
-- back to the database clock.

-- name: LockProjectGraph :exec
-- Serialises changes of the waits-for graph's shape within one project
-- (edges between existing items), so that two concurrent inserts that
-- together would close a cycle cannot both pass the cycle check.
SELECT pg_advisory_xact_lock(72500, hashtext((@project_id::uuid)::text));

-- name: GetItem :one
SELECT sqlc.embed(items),
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now
FROM items
WHERE project_id = @project_id AND id = @id;

-- name: GetItems :many
SELECT sqlc.embed(items),
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now
FROM items
WHERE project_id = @project_id AND id = ANY(@ids::uuid[])
ORDER BY seq;

-- name: ListItems :many
SELECT sqlc.embed(items),
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now
FROM items
-- The texts, for a search only (migration 00052): without a text the join
-- is false, and the planner leaves item_texts unread.
LEFT JOIN item_texts t ON sqlc.narg('text_like')::text IS NOT NULL
                      AND t.project_id = items.project_id AND t.item_id = items.id
WHERE items.project_id = @project_id
  AND seq > @after_seq::bigint
  -- The status every state asked for has, when they share one (an open
  -- state, or cancelled): with a plan made for it, items_by_status
  -- (migration 00072) gives the project's items of that status only.
  AND (sqlc.narg('status')::text IS NULL OR items.status = sqlc.narg('status')::text)
  AND (sqlc.narg('parent_id')::uuid IS NULL OR parent_id = sqlc.narg('parent_id')::uuid)
  AND (sqlc.narg('label')::text IS NULL OR labels @> ARRAY[sqlc.narg('label')::text])
  AND (sqlc.narg('text_like')::text IS NULL
       OR t.title ILIKE sqlc.narg('text_like')::text OR t.body ILIKE sqlc.narg('text_like')::text)
  AND (cardinality(@states::text[]) = 0
       OR item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                     not_before, coalesce(sqlc.narg('now')::timestamptz, now())) = ANY(@states::text[]))
ORDER BY seq
LIMIT @max_rows::integer;

-- name: ListItemsNewest :many
-- ListItems newest first; @before_seq is the cursor (the start: the
-- largest bigint). The creation-order index read backwards.
SELECT sqlc.embed(items),
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now
FROM items
-- The texts, for a search only (migration 00052): without a text the join
-- is false, and the planner leaves item_texts unread.
LEFT JOIN item_texts t ON sqlc.narg('text_like')::text IS NOT NULL
                      AND t.project_id = items.project_id AND t.item_id = items.id
WHERE items.project_id = @project_id
  AND seq < @before_seq::bigint
  -- The status every state asked for has, when they share one (an open
  -- state, or cancelled): with a plan made for it, items_by_status
  -- (migration 00072) gives the project's items of that status only.
  AND (sqlc.narg('status')::text IS NULL OR items.status = sqlc.narg('status')::text)
  AND (sqlc.narg('parent_id')::uuid IS NULL OR parent_id = sqlc.narg('parent_id')::uuid)
  AND (sqlc.narg('label')::text IS NULL OR labels @> ARRAY[sqlc.narg('label')::text])
  AND (sqlc.narg('text_like')::text IS NULL
       OR t.title ILIKE sqlc.narg('text_like')::text OR t.body ILIKE sqlc.narg('text_like')::text)
  AND (cardinality(@states::text[]) = 0
       OR item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                     not_before, coalesce(sqlc.narg('now')::timestamptz, now())) = ANY(@states::text[]))
ORDER BY seq DESC
LIMIT @max_rows::integer;

-- name: ListItemsSorted :many
-- ListItems ordered by @sort_key (priority, or updated: the last change, in
-- microseconds), ascending for @dir 1 and descending for -1, ties in
-- creation order the same way. sort_value is the row's keyset value
-- (already multiplied by @dir); the cursor is the last row's (sort_value,
-- seq * @dir). A sort of the matching rows: a view for people, bounded by
-- the page size.
SELECT sqlc.embed(items),
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now,
       ((CASE @sort_key::text WHEN 'priority' THEN priority::bigint
                             ELSE (extract(epoch FROM updated_at) * 1000000)::bigint END) * @dir::bigint)::bigint AS sort_value
FROM items
-- The texts, for a search only (migration 00052): without a text the join
-- is false, and the planner leaves item_texts unread.
LEFT JOIN item_texts t ON sqlc.narg('text_like')::text IS NOT NULL
                      AND t.project_id = items.project_id AND t.item_id = items.id
WHERE items.project_id = @project_id
  AND ((CASE @sort_key::text WHEN 'priority' THEN priority::bigint
                             ELSE (extract(epoch FROM updated_at) * 1000000)::bigint END) * @dir::bigint, seq * @dir::bigint)
      > (@after_value::bigint, @after_seq::bigint)
  -- The status every state asked for has, when they share one (an open
  -- state, or cancelled): with a plan made for it, items_by_status
  -- (migration 00072) gives the project's items of that status only.
  AND (sqlc.narg('status')::text IS NULL OR items.status = sqlc.narg('status')::text)
  AND (sqlc.narg('parent_id')::uuid IS NULL OR parent_id = sqlc.narg('parent_id')::uuid)
  AND (sqlc.narg('label')::text IS NULL OR labels @> ARRAY[sqlc.narg('label')::text])
  AND (sqlc.narg('text_like')::text IS NULL
       OR t.title ILIKE sqlc.narg('text_like')::text OR t.body ILIKE sqlc.narg('text_like')::text)
  AND (cardinality(@states::text[]) = 0
       OR item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                     not_before, coalesce(sqlc.narg('now')::timestamptz, now())) = ANY(@states::text[]))
ORDER BY sort_value, seq * @dir::bigint
LIMIT @max_rows::integer;

-- The finished items (done, cancelled) of ListItemsSorted's orders, read in
-- order from the partial indexes of finished items (migration 00073), so
-- a page of a sorted list reads its page, not the project's history:
-- graph.Service.ListItems merges them with the open items, which
-- ListItemsSorted sorts (items_by_status gives them, a set that follows
-- the open work). The four share their parameters and columns; each
-- returns ListItemsSorted's sort_value. @after_value and @after_seq are
-- the priority and seq of the last row read (@after_at and @after_seq:
-- its updated_at and seq): ascending, rows after them; descending, rows
-- before them. The start: the smallest bigints ascending, the largest
-- descending (@after_at NULL).
-- name: ListFinishedItemsByPriority :many
-- Lowest priority first, ties oldest first.
SELECT sqlc.embed(items),
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now,
       items.priority::bigint AS sort_value
FROM items
LEFT JOIN item_texts t ON sqlc.narg('text_like')::text IS NOT NULL
                      AND t.project_id = items.project_id AND t.item_id = items.id
WHERE items.project_id = @project_id
  AND items.status <> 'open'
  AND (items.priority, items.seq) > (@after_value::bigint, @after_seq::bigint)
  AND (sqlc.narg('status')::text IS NULL OR items.status = sqlc.narg('status')::text)
  AND (sqlc.narg('parent_id')::uuid IS NULL OR parent_id = sqlc.narg('parent_id')::uuid)
  AND (sqlc.narg('label')::text IS NULL OR labels @> ARRAY[sqlc.narg('label')::text])
  AND (sqlc.narg('text_like')::text IS NULL
       OR t.title ILIKE sqlc.narg('text_like')::text OR t.body ILIKE sqlc.narg('text_like')::text)
  AND (cardinality(@states::text[]) = 0
       OR item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                     not_before, coalesce(sqlc.narg('now')::timestamptz, now())) = ANY(@states::text[]))
ORDER BY items.priority, items.seq
LIMIT @max_rows::integer;

-- name: ListFinishedItemsByPriorityDesc :many
-- Highest priority first, ties newest first.
SELECT sqlc.embed(items),
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now,
       (-items.priority)::bigint AS sort_value
FROM items
LEFT JOIN item_texts t ON sqlc.narg('text_like')::text IS NOT NULL
                      AND t.project_id = items.project_id AND t.item_id = items.id
WHERE items.project_id = @project_id
  AND items.status <> 'open'
  AND (items.priority, items.seq) < (@after_value::bigint, @after_seq::bigint)
  AND (sqlc.narg('status')::text IS NULL OR items.status = sqlc.narg('status')::text)
  AND (sqlc.narg('parent_id')::uuid IS NULL OR parent_id = sqlc.narg('parent_id')::uuid)
  AND (sqlc.narg('label')::text IS NULL OR labels @> ARRAY[sqlc.narg('label')::text])
  AND (sqlc.narg('text_like')::text IS NULL
       OR t.title ILIKE sqlc.narg('text_like')::text OR t.body ILIKE sqlc.narg('text_like')::text)
  AND (cardinality(@states::text[]) = 0
       OR item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                     not_before, coalesce(sqlc.narg('now')::timestamptz, now())) = ANY(@states::text[]))
ORDER BY items.priority DESC, items.seq DESC
LIMIT @max_rows::integer;

-- name: ListFinishedItemsByUpdated :many
-- Least recently changed first, ties oldest first.
SELECT sqlc.embed(items),
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now,
       (extract(epoch FROM items.updated_at) * 1000000)::bigint AS sort_value
FROM items
LEFT JOIN item_texts t ON sqlc.narg('text_like')::text IS NOT NULL
                      AND t.project_id = items.project_id AND t.item_id = items.id
WHERE items.project_id = @project_id
  AND items.status <> 'open'
  AND (items.updated_at, items.seq) > (coalesce(sqlc.narg('after_at')::timestamptz, '-infinity'),
                               @after_seq::bigint)
  AND (sqlc.narg('status')::text IS NULL OR items.status = sqlc.narg('status')::text)
  AND (sqlc.narg('parent_id')::uuid IS NULL OR parent_id = sqlc.narg('parent_id')::uuid)
  AND (sqlc.narg('label')::text IS NULL OR labels @> ARRAY[sqlc.narg('label')::text])
  AND (sqlc.narg('text_like')::text IS NULL
       OR t.title ILIKE sqlc.narg('text_like')::text OR t.body ILIKE sqlc.narg('text_like')::text)
  AND (cardinality(@states::text[]) = 0
       OR item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                     not_before, coalesce(sqlc.narg('now')::timestamptz, now())) = ANY(@states::text[]))
ORDER BY items.updated_at, items.seq
LIMIT @max_rows::integer;

-- name: ListFinishedItemsByUpdatedDesc :many
-- Most recently changed first, ties newest first.
SELECT sqlc.embed(items),
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state,
       coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS db_now,
       (-(extract(epoch FROM items.updated_at) * 1000000)::bigint)::bigint AS sort_value
FROM items
LEFT JOIN item_texts t ON sqlc.narg('text_like')::text IS NOT NULL
                      AND t.project_id = items.project_id AND t.item_id = items.id
WHERE items.project_id = @project_id
  AND items.status <> 'open'
  AND (items.updated_at, items.seq) < (coalesce(sqlc.narg('after_at')::timestamptz, 'infinity'),
                               @after_seq::bigint)
  AND (sqlc.narg('status')::text IS NULL OR items.status = sqlc.narg('status')::text)
  AND (sqlc.narg('parent_id')::uuid IS NULL OR parent_id = sqlc.narg('parent_id')::uuid)
  AND (sqlc.narg('label')::text IS NULL OR labels @> ARRAY[sqlc.narg('label')::text])
  AND (sqlc.narg('text_like')::text IS NULL
       OR t.title ILIKE sqlc.narg('text_like')::text OR t.body ILIKE sqlc.narg('text_like')::text)
  AND (cardinality(@states::text[]) = 0
       OR item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                     not_before, coalesce(sqlc.narg('now')::timestamptz, now())) = ANY(@states::text[]))
ORDER BY items.updated_at DESC, items.seq DESC
LIMIT @max_rows::integer;

-- name: PlanEachSearch :exec
-- Makes the rest of the transaction plan each statement for its arguments.
-- A text search reads the trigram indexes for a rare text and the items in
-- order for a common one; the generic plan a prepared statement falls back
-- to after five runs can use neither index (its text might be NULL) and
-- reads every item of the project.
SELECT set_config('plan_cache_mode', 'force_custom_plan', true);

-- name: LockItem :one
-- Locks one item for a change of its row or of its counters.
SELECT id, status, parent_id, version
FROM items
WHERE project_id = @project_id AND id = @id
FOR UPDATE;

-- name: ShareLockItems :many
-- Locks prerequisites before their status is read, so a concurrent finish of
-- one of them waits for this transaction (and then sees its new edges).
SELECT id, status
FROM items
WHERE project_id = @project_id AND id = ANY(@ids::uuid[])
ORDER BY id
FOR SHARE;

-- name: LockItems :many
SELECT id, status, parent_id
FROM items
WHERE project_id = @project_id AND id = ANY(@ids::uuid[])
ORDER BY id
FOR UPDATE;

-- name: InsertItems :exec
-- Bulk insert in input order (seq follows the arrays). parent_ids uses the
-- nil uuid for "no parent"; labels are JSON arrays of strings; plan_keys
-- uses '' for "no key"; on_expiry '' means NULL (the project's default).
INSERT INTO items (project_id, id, parent_id, title, body, priority, labels, metadata,
                   unmet_dependencies, open_children, plan_key, on_expiry, created_by, created_at, updated_at,
                   requires, touches)
SELECT @project_id::uuid, u.id, nullif(u.parent_id, '00000000-0000-0000-0000-000000000000'::uuid),
       u.title, u.body, u.priority,
       ARRAY(SELECT jsonb_array_elements_text(u.labels::jsonb)), u.metadata::jsonb,
       u.unmet, u.children, nullif(u.plan_key, ''), nullif(u.on_expiry, ''), @created_by::text,
       coalesce(sqlc.narg('now')::timestamptz, now()), coalesce(sqlc.narg('now')::timestamptz, now()),
       ARRAY(SELECT jsonb_array_elements_text(u.requires::jsonb)),
       ARRAY(SELECT jsonb_array_elements_text(u.touches::jsonb))
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@parent_ids::uuid[]) AS parent_id,
             unnest(@titles::text[]) AS title, unnest(@bodies::text[]) AS body,
             unnest(@priorities::integer[]) AS priority, unnest(@labels::text[]) AS labels,
             unnest(@metadata::text[]) AS metadata, unnest(@unmet::integer[]) AS unmet,
             unnest(@children::integer[]) AS children, unnest(@plan_keys::text[]) AS plan_key,
             unnest(@on_expiry::text[]) AS on_expiry,
             unnest(@requires::text[]) AS requires, unnest(@touches::text[]) AS touches) AS u;

-- name: LockItemsByPlanKey :many
-- The items of the project that carry these plan keys, share-locked: a plan
-- import leaves them alone but may depend on them or add children below
-- them, so they must not finish or change until it commits. depends_on is
-- what each waits for (the primary key of dependencies), to say how it
-- differs from the plan.
SELECT i.id, i.plan_key::text AS plan_key, i.parent_id, i.status, i.title, i.body, i.priority, i.labels, i.requires, i.touches, i.on_expiry,
       ARRAY(SELECT d.depends_on_id FROM dependencies d
             WHERE d.project_id = i.project_id AND d.item_id = i.id)::uuid[] AS depends_on
FROM items i
WHERE i.project_id = @project_id AND i.plan_key = ANY(@keys::text[])
ORDER BY i.id
FOR SHARE OF i;

-- name: InsertDependencies :exec
INSERT INTO dependencies (project_id, item_id, depends_on_id, created_by, created_at)
SELECT @project_id::uuid, u.item_id, u.depends_on_id, @created_by::text,
       coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT unnest(@item_ids::uuid[]) AS item_id, unnest(@depends_on_ids::uuid[]) AS depends_on_id) AS u;

-- name: InsertDependency :execrows
INSERT INTO dependencies (project_id, item_id, depends_on_id, created_by, created_at)
VALUES (@project_id, @item_id, @depends_on_id, @created_by, coalesce(sqlc.narg('now')::timestamptz, now()))
ON CONFLICT DO NOTHING;

-- name: DeleteDependency :execrows
DELETE FROM dependencies
WHERE project_id = @project_id AND item_id = @item_id AND depends_on_id = @depends_on_id;

-- name: AddUnmetDependencies :exec
UPDATE items
SET unmet_dependencies = unmet_dependencies + @delta::integer,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE project_id = @project_id AND id = @id;

-- name: AddOpenChildren :exec
UPDATE items
SET open_children = open_children + @delta::integer,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE project_id = @project_id AND id = @id;

-- name: FinishItems :many
-- Marks open items terminal. Items that are no longer open are left alone
-- and not returned. Marking an item done that waits for a dependency or
-- an open child raises WG007 (item_finishable, migration 00064), computed
-- in the SET from the row version this statement writes (the newest under
-- READ COMMITTED, so a dependency or child committed while it waited for
-- the row is seen): nothing changes. A cancellation is not checked (it
-- cancels the open descendants itself; graph.Cancel).
UPDATE items
SET status = CASE WHEN @status::text <> 'done' THEN @status::text
                  WHEN item_finishable(unmet_dependencies, open_children) THEN 'done' END,
    result = sqlc.narg('result')::jsonb,
    finished_at = coalesce(sqlc.narg('now')::timestamptz, now()),
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now()),
    active_lease_id = NULL
WHERE project_id = @project_id AND id = ANY(@ids::uuid[]) AND status = 'open'
RETURNING id, parent_id;

-- name: ReleaseDependents :execrows
-- One prerequisite fewer is open for each dependent of the finished items:
-- touches only the dependents' rows (index dependencies_dependents, then
-- the items' primary key). The items are joined on the project the
-- subquery returns, not on @project_id itself: given the constant, a
-- planner whose statistics predate a project's growth takes the project
-- for a few rows and walks all of its items (see
-- TestGraphJoinsDoNotTrustStaleProjectStatistics). The questions and holds
-- still open on those of the items that are done are dismissed, and the
-- blocking ones leave the items' open_attention counters, in the same
-- update of each row.
WITH closed AS (
    UPDATE attention_requests r
    SET state = 'dismissed',
        answer = 'The item was done before this was answered.',
        resolved_by = 'system',
        resolved_at = coalesce(sqlc.narg('now')::timestamptz, clock_timestamp())
    -- Each item's open requests by attention_by_item, one lookup per id,
    -- and the item by its key on the project the request names (for the
    -- same reason as above).
    FROM unnest(@ids::uuid[]) AS d(id)
    CROSS JOIN LATERAL (
        SELECT a.project_id, a.id
        FROM attention_requests a
        WHERE a.project_id = @project_id AND a.item_id = d.id
          AND a.state = 'open' AND a.reason IN ('question', 'hold')
          AND EXISTS (SELECT FROM items f WHERE f.project_id = a.project_id AND f.id = a.item_id AND f.status = 'done')
    ) AS a
    WHERE r.project_id = a.project_id AND r.id = a.id
    RETURNING r.project_id, r.item_id, r.blocking
), changes AS (
    SELECT dd.project_id, dd.item_id, 1 AS deps, 0 AS attention
    FROM dependencies dd
    WHERE dd.project_id = @project_id AND dd.depends_on_id = ANY(@ids::uuid[])
    UNION ALL
    SELECT c.project_id, c.item_id, 0 AS deps, 1 AS attention
    FROM closed c WHERE c.blocking
)
UPDATE items AS i
SET unmet_dependencies = i.unmet_dependencies - d.deps,
    open_attention = i.open_attention - d.attention,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT ch.project_id, ch.item_id, sum(ch.deps)::integer AS deps, sum(ch.attention)::integer AS attention
      FROM changes ch
      GROUP BY ch.project_id, ch.item_id) AS d
WHERE i.project_id = d.project_id AND i.id = d.item_id;

-- name: ReleaseParents :execrows
-- One child fewer is open for each parent listed (once per finished child).
UPDATE items AS i
SET open_children = i.open_children - c.n,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT p.parent_id, count(*)::integer AS n
      FROM unnest(@parent_ids::uuid[]) AS p(parent_id)
      GROUP BY p.parent_id) AS c
WHERE i.project_id = @project_id AND i.id = c.parent_id;

-- name: ReleaseCompletedLease :execrows
-- ReleaseDependents and ReleaseParents for a completion sent as one
-- pipelined batch, in the statement after its EndLease (with
-- abort_if_lost, so this runs only when that statement ended the lease and
-- marked its item done): one prerequisite fewer for each dependent of the
-- lease's item, one child fewer for its parent, one row version for a row
-- that is both. Its own statement, so its snapshot is taken after EndLease
-- held the item's row: a dependency committed meanwhile is counted (ADR
-- 0007). The items are joined on the project the subqueries return, as in
-- ReleaseDependents.
WITH done AS (
    SELECT l.project_id, l.item_id
    FROM leases l
    WHERE l.project_id = @project_id AND l.id = @lease_id
), closed AS (
    -- The questions and holds still open on the done items are
    -- dismissed (as in ReleaseDependents).
    UPDATE attention_requests r
    SET state = 'dismissed',
        answer = 'The item was done before this was answered.',
        resolved_by = 'system',
        resolved_at = coalesce(sqlc.narg('now')::timestamptz, clock_timestamp())
    FROM done
    WHERE r.project_id = done.project_id AND r.item_id = done.item_id
      AND r.state = 'open' AND r.reason IN ('question', 'hold')
    RETURNING r.project_id, r.item_id, r.blocking
), changes AS (
    SELECT dd.project_id, dd.item_id, 1 AS deps, 0 AS children, 0 AS attention
    FROM done JOIN dependencies dd ON dd.project_id = done.project_id AND dd.depends_on_id = done.item_id
    UNION ALL
    SELECT f.project_id, f.parent_id AS item_id, 0 AS deps, 1 AS children, 0 AS attention
    FROM done JOIN items f ON f.project_id = done.project_id AND f.id = done.item_id
    WHERE f.parent_id IS NOT NULL
    UNION ALL
    SELECT cl.project_id, cl.item_id, 0 AS deps, 0 AS children, 1 AS attention
    FROM closed cl WHERE cl.blocking
)
UPDATE items AS i
SET unmet_dependencies = i.unmet_dependencies - c.deps,
    open_children = i.open_children - c.children,
    open_attention = i.open_attention - c.attention,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT ch.project_id, ch.item_id, sum(ch.deps)::integer AS deps, sum(ch.children)::integer AS children,
             sum(ch.attention)::integer AS attention
      FROM changes ch
      GROUP BY ch.project_id, ch.item_id) AS c
WHERE i.project_id = c.project_id AND i.id = c.item_id;

-- name: ReleaseCompletedLeases :execrows
-- ReleaseCompletedLease for a batch completion sent as one pipelined batch
-- (lease.Service.CompleteBatch), in the statement after its CompleteLeases:
-- the leases of @lease_ids that this transaction completed (their row
-- version is its own: xmin, in the batch's implicit transaction, which has
-- no subtransactions; a lease completed before, a replay, is not) release
-- their items' dependents and parents, each dependent and parent counted
-- once per finished item and updated once. Its own statement, so its
-- snapshot is taken after CompleteLeases held the items' rows, as
-- ReleaseCompletedLease's.
WITH done AS (
    -- Each lease by its id (leases_by_id), one lookup per id (LIMIT 1
    -- keeps the planner from flattening the lookup into a join), the
    -- project checked on the row found (IS NOT DISTINCT FROM: not an
    -- index condition). "id = ANY (@lease_ids)", the flattened join and a
    -- project equality were each planned as a walk of the project's
    -- leases (leases_by_acquired or leases_pkey by project alone) when
    -- the statistics did not know the project yet.
    SELECT l.project_id, l.item_id
    FROM unnest(@lease_ids::uuid[]) AS e(id)
    CROSS JOIN LATERAL (
        SELECT l.project_id, l.item_id
        FROM leases l
        WHERE l.id = e.id AND l.project_id IS NOT DISTINCT FROM @project_id::uuid
          AND l.outcome = 'completed'
          AND l.xmin = pg_current_xact_id_if_assigned()::xid
        LIMIT 1
    ) AS l
), closed AS (
    -- The questions and holds still open on the done items are
    -- dismissed (as in ReleaseDependents).
    UPDATE attention_requests r
    SET state = 'dismissed',
        answer = 'The item was done before this was answered.',
        resolved_by = 'system',
        resolved_at = coalesce(sqlc.narg('now')::timestamptz, clock_timestamp())
    FROM done
    WHERE r.project_id = done.project_id AND r.item_id = done.item_id
      AND r.state = 'open' AND r.reason IN ('question', 'hold')
    RETURNING r.project_id, r.item_id, r.blocking
), changes AS (
    SELECT dd.project_id, dd.item_id, 1 AS deps, 0 AS children, 0 AS attention
    FROM done JOIN dependencies dd ON dd.project_id = done.project_id AND dd.depends_on_id = done.item_id
    UNION ALL
    SELECT f.project_id, f.parent_id AS item_id, 0 AS deps, 1 AS children, 0 AS attention
    FROM done JOIN items f ON f.project_id = done.project_id AND f.id = done.item_id
    WHERE f.parent_id IS NOT NULL
    UNION ALL
    SELECT cl.project_id, cl.item_id, 0 AS deps, 0 AS children, 1 AS attention
    FROM closed cl WHERE cl.blocking
)
UPDATE items AS i
SET unmet_dependencies = i.unmet_dependencies - c.deps,
    open_children = i.open_children - c.children,
    open_attention = i.open_attention - c.attention,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT ch.project_id, ch.item_id, sum(ch.deps)::integer AS deps, sum(ch.children)::integer AS children,
             sum(ch.attention)::integer AS attention
      FROM changes ch
      GROUP BY ch.project_id, ch.item_id) AS c
WHERE i.project_id = c.project_id AND i.id = c.item_id;

-- name: UpdateItemFields :execrows
-- Writes the fields given (NULL leaves one as it is) and bumps the version,
-- when one of them differs from what is stored: an edit that changes
-- nothing writes nothing (no new version, no event; the caller sees 0
-- rows).
UPDATE items
SET title = coalesce(sqlc.narg('title')::text, title),
    body = coalesce(sqlc.narg('body')::text, body),
    priority = coalesce(sqlc.narg('priority')::integer, priority),
    labels = coalesce(sqlc.narg('labels')::text[], labels),
    requires = coalesce(sqlc.narg('requires')::text[], requires),
    touches = coalesce(sqlc.narg('touches')::text[], touches),
    metadata = coalesce(sqlc.narg('metadata')::jsonb, metadata),
    -- NULL leaves it; '' clears it (back to the project's default).
    on_expiry = CASE WHEN sqlc.narg('on_expiry')::text IS NULL THEN on_expiry
                     ELSE nullif(sqlc.narg('on_expiry')::text, '') END,
    version = version + 1,
    -- The mark of a live lease's overlap (migration 00167) was judged for
    -- the old touches: an edit of them drops it (a claim tests the item).
    scope_held = scope_held AND touches IS NOT DISTINCT FROM coalesce(sqlc.narg('touches')::text[], touches),
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE project_id = @project_id AND id = @id
  AND (title IS DISTINCT FROM coalesce(sqlc.narg('title')::text, title)
       OR body IS DISTINCT FROM coalesce(sqlc.narg('body')::text, body)
       OR priority IS DISTINCT FROM coalesce(sqlc.narg('priority')::integer, priority)
       OR labels IS DISTINCT FROM coalesce(sqlc.narg('labels')::text[], labels)
       OR requires IS DISTINCT FROM coalesce(sqlc.narg('requires')::text[], requires)
       OR touches IS DISTINCT FROM coalesce(sqlc.narg('touches')::text[], touches)
       OR metadata IS DISTINCT FROM coalesce(sqlc.narg('metadata')::jsonb, metadata)
       OR on_expiry IS DISTINCT FROM CASE WHEN sqlc.narg('on_expiry')::text IS NULL THEN on_expiry
                                          ELSE nullif(sqlc.narg('on_expiry')::text, '') END);

-- name: OpenDescendants :many
-- Open items below the given one (any depth), deepest last.
WITH RECURSIVE below(id, depth) AS (
    SELECT c.id, 1 FROM items c WHERE c.project_id = @project_id AND c.parent_id = @id::uuid
    UNION ALL
    SELECT c.id, b.depth + 1
    FROM below b JOIN items c ON c.project_id = @project_id AND c.parent_id = b.id
)
SELECT i.id
FROM below b JOIN items i ON i.project_id = @project_id AND i.id = b.id
WHERE i.status = 'open'
ORDER BY b.depth, i.seq;

-- name: EndLeasesCancelled :many
-- A person's cancel ends the active leases of the cancelled items, stamped
-- by the database clock when it writes (see db/queries/lease.sql), not at
-- its transaction's start. A lease that had already expired (no one had
-- reaped it yet) ends as the reaper would have ended it: 'expired', at its
-- expires_at; it gave no rights after that.
UPDATE leases l
SET ended_at = CASE WHEN l.expires_at <= t.at THEN l.expires_at
                    ELSE coalesce(sqlc.narg('now')::timestamptz, greatest(t.at, l.acquired_at, l.heartbeat_at)) END,
    outcome = CASE WHEN l.expires_at <= t.at THEN 'expired' ELSE 'cancelled' END,
    outcome_detail = CASE WHEN l.expires_at <= t.at
        THEN jsonb_build_object('reaped_at', t.at, 'heartbeats', l.heartbeats)
        ELSE jsonb_build_object('by', @by::text, 'reason', @reason::text) END
FROM (SELECT coalesce(sqlc.narg('now')::timestamptz, clock_timestamp()) AS at) AS t
WHERE l.project_id = @project_id AND l.item_id = ANY(@item_ids::uuid[]) AND l.ended_at IS NULL
RETURNING l.item_id, l.worker;

-- name: DismissAttentionCancelled :execrows
-- A person's cancel dismisses the open attention requests of the cancelled
-- items (resolved_by the person, @note as the dismissal note), so no one
-- is asked about an item that will never run, and takes the blocking ones
-- off the items' open_attention counters (kept exact whatever the status).
WITH closed AS (
    UPDATE attention_requests r
    SET state = 'dismissed',
        answer = @note::text,
        resolved_by = @by::text,
        resolved_at = coalesce(sqlc.narg('now')::timestamptz, clock_timestamp())
    WHERE r.project_id = @project_id AND r.item_id = ANY(@item_ids::uuid[]) AND r.state = 'open'
    RETURNING r.project_id, r.item_id, r.blocking
), counted AS (
    UPDATE items i
    SET open_attention = i.open_attention - c.n
    FROM (SELECT closed.project_id, closed.item_id, count(*)::integer AS n
          FROM closed WHERE closed.blocking
          GROUP BY closed.project_id, closed.item_id) AS c
    WHERE i.project_id = c.project_id AND i.id = c.item_id
    RETURNING i.id
)
SELECT closed.item_id FROM closed;

-- name: SetPreviousWorker :exec
UPDATE items SET previous_worker = @worker::text
WHERE project_id = @project_id AND id = @id;

-- name: WaitsForReach :many
-- Every (node, via) pair reachable from the sources along waits-for edges:
-- an item waits for its dependencies and for its children. The caller
-- rebuilds a path from the pairs.
WITH RECURSIVE reach(node, via) AS (
    SELECT s.id, NULL::uuid FROM unnest(@sources::uuid[]) AS s(id)
    UNION
    SELECT e.next_id, r.node
    FROM reach r
    CROSS JOIN LATERAL (
        SELECT d.depends_on_id AS next_id FROM dependencies d
        WHERE d.project_id = @project_id AND d.item_id = r.node
        UNION ALL
        SELECT c.id FROM items c
        WHERE c.project_id = @project_id AND c.parent_id = r.node
    ) AS e
)
SELECT node::uuid AS node, coalesce(via, '00000000-0000-0000-0000-000000000000'::uuid)::uuid AS via FROM reach;

-- name: WaitersOf :many
-- The items that wait for @id, transitively, whatever their status: along
-- waits-for edges reversed, the items that depend on it and its parent (a
-- parent waits for its children), then theirs. A dependency of @id on any
-- of them would close a cycle. At most @max_rows rows: the walk is read
-- lazily, so it stops there.
WITH RECURSIVE waiters(node) AS (
    SELECT @id::uuid
    UNION
    SELECT w.waiter
    FROM waiters r
    CROSS JOIN LATERAL (
        SELECT d.item_id AS waiter FROM dependencies d
        WHERE d.project_id = @project_id AND d.depends_on_id = r.node
        UNION ALL
        SELECT i.parent_id FROM items i
        WHERE i.project_id = @project_id AND i.id = r.node AND i.parent_id IS NOT NULL
    ) AS w
)
SELECT node::uuid AS id FROM waiters WHERE node <> @id::uuid LIMIT @max_rows;

-- name: OpenPrerequisiteEdges :many
-- The waits-for edges (waiter, prerequisite) among open items reachable from
-- the given item through open prerequisites. A prerequisite's status is
-- looked up per edge (primary key), not joined: see ReleaseDependents. The
-- walk keeps reached items only, so each is expanded once (a walk over
-- (item, waiter) pairs expands an item once per waiter: cubic in a dense
-- graph). Every reached item is open, so the edges are those of each
-- reached item to another reached item.
WITH RECURSIVE reach(node) AS (
    SELECT @id::uuid
    UNION
    SELECT e.next_id
    FROM reach r
    CROSS JOIN LATERAL (
        SELECT d.depends_on_id AS next_id FROM dependencies d
        WHERE d.project_id = @project_id AND d.item_id = r.node
          AND (SELECT p.status FROM items p
               WHERE p.project_id = d.project_id AND p.id = d.depends_on_id) = 'open'
        UNION ALL
        SELECT c.id FROM items c
        WHERE c.project_id = @project_id AND c.parent_id = r.node AND c.status = 'open'
    ) AS e
)
SELECT @id::uuid AS node, '00000000-0000-0000-0000-000000000000'::uuid AS via
UNION
SELECT e.next_id::uuid AS node, r.node::uuid AS via
FROM reach r
CROSS JOIN LATERAL (
    SELECT d.depends_on_id AS next_id FROM dependencies d
    WHERE d.project_id = @project_id AND d.item_id = r.node
    UNION ALL
    SELECT c.id FROM items c
    WHERE c.project_id = @project_id AND c.parent_id = r.node
) AS e
WHERE e.next_id IN (SELECT node FROM reach);

-- name: ItemRefs :many
SELECT id, title, parent_id, seq,
       item_state(status, active_lease_id, open_attention, unmet_dependencies, open_children,
                  not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state
FROM items
WHERE project_id = @project_id AND id = ANY(@ids::uuid[])
ORDER BY seq;

-- name: ProjectItemRefs :many
-- The items of a project's picture, at most @max_rows: its open items,
-- oldest first (items_by_status, migration 00072), then, while there is
-- room, its finished ones, latest first. The finished part runs only when
-- the open items leave room (the Append stops when the LIMIT is reached),
-- so the cost follows the picture, not the project's history, whose first
-- items, once the picture, are finished work of long ago.
SELECT r.id, r.title, r.parent_id, r.seq,
       item_state(r.status, r.active_lease_id, r.open_attention, r.unmet_dependencies, r.open_children,
                  r.not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state
FROM ((SELECT o.id, o.title, o.parent_id, o.seq, o.status, o.active_lease_id, o.open_attention,
              o.unmet_dependencies, o.open_children, o.not_before
       FROM items o
       WHERE o.project_id = @project_id AND o.status = 'open'
       ORDER BY o.seq
       LIMIT @max_rows::integer)
      UNION ALL
      (SELECT f.id, f.title, f.parent_id, f.seq, f.status, f.active_lease_id, f.open_attention,
              f.unmet_dependencies, f.open_children, f.not_before
       FROM items f
       WHERE f.project_id = @project_id AND f.status <> 'open'
       ORDER BY f.seq DESC
       LIMIT @max_rows::integer)) AS r
LIMIT @max_rows::integer;

-- name: PrerequisiteRefs :many
-- The dependencies of the given items (all of them, finished ones too).
-- The edges are read first (OFFSET 0 keeps the subquery apart) and the
-- items joined on the project it returns, so each is one primary-key
-- lookup whatever the statistics say of the project's size (see
-- ReleaseDependents).
SELECT d.item_id AS waiter_id, i.id, i.title, i.status,
       item_state(i.status, i.active_lease_id, i.open_attention, i.unmet_dependencies, i.open_children,
                  i.not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state
FROM (SELECT dd.project_id, dd.item_id, dd.depends_on_id
      FROM dependencies dd
      WHERE dd.project_id = @project_id AND dd.item_id = ANY(@ids::uuid[])
      OFFSET 0) AS d
JOIN items i ON i.project_id = d.project_id AND i.id = d.depends_on_id
ORDER BY i.seq;

-- name: OpenPrerequisiteRefs :many
-- The open prerequisites of each given item, at most @per_item of each
-- (the earliest created): what an item's blocked_by lists. Each item's
-- edges are read apart (OFFSET 0, as in PrerequisiteRefs) and its open
-- prerequisites sorted alone, so the answer is bounded by the number of
-- items times per_item however many each waits for.
SELECT w.id::uuid AS waiter_id, p.id, p.title, p.state
FROM unnest(@ids::uuid[]) AS w(id)
CROSS JOIN LATERAL (
    SELECT i.id, i.title, i.seq,
           item_state(i.status, i.active_lease_id, i.open_attention, i.unmet_dependencies, i.open_children,
                      i.not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state
    FROM (SELECT dd.project_id, dd.depends_on_id
          FROM dependencies dd
          WHERE dd.project_id = @project_id AND dd.item_id = w.id
          OFFSET 0) AS d
    JOIN items i ON i.project_id = d.project_id AND i.id = d.depends_on_id
    WHERE i.status = 'open'
    ORDER BY i.seq
    LIMIT @per_item) AS p
ORDER BY p.seq;

-- name: OpenChildRefs :many
-- The open children of each given item, at most @per_item of each (the
-- earliest created), from items_by_parent.
SELECT w.id::uuid AS parent_id, c.id, c.title, c.state
FROM unnest(@ids::uuid[]) AS w(id)
CROSS JOIN LATERAL (
    SELECT i.id, i.title, i.seq,
           item_state(i.status, i.active_lease_id, i.open_attention, i.unmet_dependencies, i.open_children,
                      i.not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state
    FROM items i
    WHERE i.project_id = @project_id AND i.parent_id = w.id AND i.status = 'open'
    ORDER BY i.seq
    LIMIT @per_item) AS c
ORDER BY c.seq;

-- name: DependentRefs :many
-- The items that depend on @id; planned like PrerequisiteRefs.
SELECT i.id, i.title,
       item_state(i.status, i.active_lease_id, i.open_attention, i.unmet_dependencies, i.open_children,
                  i.not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state
FROM (SELECT dd.project_id, dd.item_id
      FROM dependencies dd
      WHERE dd.project_id = @project_id AND dd.depends_on_id = @id
      OFFSET 0) AS d
JOIN items i ON i.project_id = d.project_id AND i.id = d.item_id
ORDER BY i.seq;

-- name: ChildRefs :many
-- The children of the given items (all, or only the open ones).
SELECT i.parent_id::uuid AS parent_id, i.id, i.title,
       item_state(i.status, i.active_lease_id, i.open_attention, i.unmet_dependencies, i.open_children,
                  i.not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state
FROM items i
WHERE i.project_id = @project_id AND i.parent_id = ANY(@ids::uuid[])
  AND (NOT @only_open::boolean OR i.status = 'open')
ORDER BY i.seq;

-- name: AncestorRefs :many
-- The ancestors of an item, its parent first.
WITH RECURSIVE up(id, depth) AS (
    SELECT p.parent_id, 1 FROM items p WHERE p.project_id = @project_id AND p.id = @id AND p.parent_id IS NOT NULL
    UNION ALL
    SELECT i.parent_id, u.depth + 1
    FROM up u JOIN items i ON i.project_id = @project_id AND i.id = u.id
    WHERE i.parent_id IS NOT NULL
)
SELECT i.id, i.title,
       item_state(i.status, i.active_lease_id, i.open_attention, i.unmet_dependencies, i.open_children,
                  i.not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS state
FROM up u JOIN items i ON i.project_id = @project_id AND i.id = u.id
ORDER BY u.depth;

-- name: OpenBlockingAttention :many
SELECT item_id, id, question, created_at
FROM attention_requests
WHERE project_id = @project_id AND item_id = ANY(@ids::uuid[]) AND state = 'open' AND blocking
ORDER BY seq;

-- name: EdgesAmong :many
-- Dependency edges with both ends in the given set, at most max_rows of
-- them, those among the set's first items first: reach is the 1-based
-- position in ids of the edge's later end, so the edges among the first k
-- items are exactly those of reach <= k. Each given item's edges are one
-- probe of dependencies_pkey (OFFSET 0 keeps the probe a nested loop),
-- filtered by their other end; filtering the project's edges instead,
-- which the planner chose for a few hundred ids, read every edge of the
-- project's history. The filter stays outside the probe: as an index
-- condition on its third column, the array would be one descent of the
-- index per element, per item. The ids are distinct.
SELECT d.item_id, d.depends_on_id, greatest(i.ord, o.ord)::bigint AS reach
FROM unnest(@ids::uuid[]) WITH ORDINALITY AS i(id, ord)
CROSS JOIN LATERAL (SELECT dd.item_id, dd.depends_on_id
                    FROM dependencies dd
                    WHERE dd.project_id = @project_id AND dd.item_id = i.id
                    OFFSET 0) AS d
JOIN unnest(@ids::uuid[]) WITH ORDINALITY AS o(id, ord) ON o.id = d.depends_on_id
ORDER BY reach, d.item_id, d.depends_on_id
LIMIT @max_rows;

-- name: NeighbourIDs :many
-- Items one waits-for edge away from the given set, in either direction.
SELECT d.depends_on_id AS id FROM dependencies d
WHERE d.project_id = @project_id AND d.item_id = ANY(@ids::uuid[])
UNION
SELECT d.item_id FROM dependencies d
WHERE d.project_id = @project_id AND d.depends_on_id = ANY(@ids::uuid[])
UNION
SELECT c.id FROM items c
WHERE c.project_id = @project_id AND c.parent_id = ANY(@ids::uuid[])
UNION
SELECT p.parent_id::uuid FROM items p
WHERE p.project_id = @project_id AND p.id = ANY(@ids::uuid[]) AND p.parent_id IS NOT NULL;

-- name: ItemTitles :many
-- Titles for labelling lease rows in the UI.
SELECT id, title FROM items
WHERE project_id = @project_id AND id = ANY(@ids::uuid[]);

-- name: ScopeHolders :many
-- For each of the given items, the live leases of other items that hold a
-- scope overlapping the item's touches (the rule of wg_scopes_overlap, as
-- the claim applies it): what keeps a ready item with touches from being
-- claimed. A lease holds its scopes until it is ended, past its expiry too
-- (migration 00086), as its item stays leased.
SELECT i.id AS item_id, h.id AS lease_id, h.item_id AS holder_item_id, h.worker, h.scopes
FROM items i
JOIN leases h ON h.project_id = i.project_id
             AND h.ended_at IS NULL AND h.scope_keys <> '{}'
             AND h.scope_keys && wg_scope_probe(i.touches)
             AND h.id IS DISTINCT FROM i.active_lease_id
             AND wg_scopes_overlap(h.scopes, i.touches)
WHERE i.project_id = @project_id AND i.id = ANY(@ids::uuid[]) AND i.touches <> '{}'
ORDER BY i.id, h.acquired_at;

-- name: SpentBudgetsOver :many
-- For each of the given items under a budget, the budgeted items over it
-- whose budget is spent (budget_spent, by the database clock): what keeps
-- a ready item from being handed out (the claim's wg_budgets_spent). An
-- item under no budget costs the read of its own row.
SELECT i.id AS item_id, bi.id AS budget_item_id, bi.title AS budget_title,
       item_state(bi.status, bi.active_lease_id, bi.open_attention, bi.unmet_dependencies, bi.open_children,
                  bi.not_before, coalesce(sqlc.narg('now')::timestamptz, now()))::text AS budget_state
FROM items i
JOIN budgets b ON b.project_id = i.project_id AND b.item_id = ANY (i.budget_roots)
JOIN items bi ON bi.project_id = b.project_id AND bi.id = b.item_id
WHERE i.project_id = @project_id AND i.id = ANY(@ids::uuid[]) AND i.budget_roots <> '{}'
  AND budget_spent(b, coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
ORDER BY i.id, bi.id;

-- name: BudgetDepthLimits :many
-- The depth limits of the budgets over @item_id (its own included), with
-- how deep @item_id sits below each budget's item (0: on it), tightest
-- first: a new item L levels below @item_id passes a limit when depth +
-- L > max_depth. An item under no budget costs the read of its own
-- row (budget_roots, migration 00035); the walk up stops at the topmost
-- budgeted item.
WITH RECURSIVE up(id, parent_id, depth, roots) AS (
    SELECT i.id, i.parent_id, 0, i.budget_roots
    FROM items i
    WHERE i.project_id = @project_id AND i.id = @item_id AND i.budget_roots <> '{}'
    UNION ALL
    SELECT p.id, p.parent_id, up.depth + 1, up.roots
    FROM items p JOIN up ON p.project_id = @project_id AND p.id = up.parent_id
    WHERE up.depth < 1000
)
SELECT b.item_id, b.max_depth::int AS max_depth, up.depth::int AS depth
FROM up JOIN budgets b ON b.project_id = @project_id AND b.item_id = up.id
WHERE b.max_depth IS NOT NULL AND b.item_id = ANY (up.roots)
ORDER BY b.max_depth - up.depth, b.item_id;
