-- Batches of the lease protocol: several claims, completions or heartbeats
-- in one statement. Owned by package lease (lease/batch.go). Each entry is
-- fenced on its own in the writing statement, exactly as its single
-- statement in lease.sql fences it, and the clock rules there apply (one
-- instant "t" per statement, or per taken row for a grant).

-- name: ClaimItems :many
-- ClaimItem for up to @max_items items at once: the highest-priority ready
-- items (index items_claim, ties first-created first) that carry @labels,
-- are past their retry backoff and are not reserved for another worker,
-- up to the first of them that has touches (see candidate).
-- Each taken item gets its own epoch increment, its own new lease id
-- (wg_uuid_v7, time-ordered, per row: migration 00166) and its own lease row, stamped once its row
-- is held and never before its previous lease ended. Rows other claimers
-- hold are skipped. Leases come back in grant order (priority, then age),
-- each with its item as the statement left it and the instant its time
-- gates used, so that the claim reads nothing back.
--
-- With @guarded, the statement is a batch claim's one statement
-- (lease.Service.ClaimBatch) and claims nothing when either guard of
-- ClaimItemDirect says the transactional path must run instead: a lease of
-- the project is past its expiry and not yet ended (read from the partial
-- index leases_active_expiry), or @token_quiet > 0 and the token holds
-- @token_quiet live leases or more. The transactional path passes
-- @guarded = false after it has reaped and counted.
WITH scan AS MATERIALIZED (
    -- The first @max_items items of two sources in claim order, merged (a
    -- Merge Append of ordered reads): "walk", the ready items not in
    -- backoff (the claim indexes), and "due", the items whose retry
    -- backoff has passed and is not yet swept (the front of items_backoff,
    -- migration 00141; none when the sweeper keeps up). Each item is read
    -- again by its key and locked (SKIP LOCKED) with every filter judged
    -- on the row as it stands, until @max_items are locked: an item after
    -- them, in either source, is never locked, so it stays free for a
    -- concurrent claim however long this transaction lasts. The guards
    -- (@guarded) are in each source: when one holds the claim back,
    -- nothing is read or locked.
    SELECT k.project_id, k.id, o.priority, o.seq, k.touches
    FROM ((SELECT c.id, c.priority, c.seq
           FROM items c
           WHERE c.project_id = @project_id
             AND c.ready
             AND NOT c.in_backoff
             -- Not held by a live lease's scopes (migration 00167).
             AND NOT c.scope_held
             AND c.labels @> @labels::text[]
             AND (c.not_before IS NULL OR c.not_before <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
             -- "requires = '{}'" first: it is what the planner can
             -- estimate (from the column's most common value), and
             -- "requires <@ ..." alone it estimates at 0.5% of the rows,
             -- so that it read and sorted every ready item of the project
             -- instead of the first max_items of the claim index. Without
             -- capabilities the predicate folds to "requires = '{}'", that
             -- of items_ready_unrestricted (migration 00104): the statement
             -- then walks it and never reads an item that requires a
             -- capability.
             AND (c.requires = '{}'
                  OR (cardinality(coalesce(sqlc.narg('capabilities')::text[], '{}')) > 0
                      AND c.requires <@ sqlc.narg('capabilities')::text[]))
             AND (NOT @guarded::boolean
                  OR coalesce((SELECT l.expires_at FROM leases l
                               WHERE l.project_id = @project_id AND l.ended_at IS NULL
                               ORDER BY l.expires_at LIMIT 1)
                              > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()), true))
             AND (NOT @guarded::boolean
                  OR sqlc.arg('token_quiet')::int = 0
                  OR (SELECT count(*) FROM leases t
                      WHERE t.token_id = sqlc.narg('token_id')::uuid AND t.ended_at IS NULL
                        AND t.expires_at > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
                     < sqlc.arg('token_quiet')::int)
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
             AND (NOT @guarded::boolean
                  OR coalesce((SELECT l.expires_at FROM leases l
                               WHERE l.project_id = @project_id AND l.ended_at IS NULL
                               ORDER BY l.expires_at LIMIT 1)
                              > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()), true))
             AND (NOT @guarded::boolean
                  OR sqlc.arg('token_quiet')::int = 0
                  OR (SELECT count(*) FROM leases t
                      WHERE t.token_id = sqlc.narg('token_id')::uuid AND t.ended_at IS NULL
                        AND t.expires_at > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
                     < sqlc.arg('token_quiet')::int)
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
          -- Budgets (migration 00035), capabilities and write scopes, as
          -- in ClaimItem.
          AND (k.budget_roots = '{}'
               OR NOT wg_budgets_spent(k.project_id, k.budget_roots,
                                       coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())))
          AND (k.requires = '{}'
               OR (cardinality(coalesce(sqlc.narg('capabilities')::text[], '{}')) > 0
                   AND k.requires <@ sqlc.narg('capabilities')::text[]))
          AND (k.touches = '{}'
               OR wg_scope_holder(k.project_id, NULL, k.touches,
                                  coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())) IS NULL)
        FOR UPDATE OF k SKIP LOCKED
    ) AS k
    ORDER BY o.priority DESC, o.seq
    LIMIT @max_items
), candidate AS (
    -- This statement grants no write scopes: the scopes of one batch's
    -- items could overlap each other, and only the single claim's
    -- statement takes the scope locks (lease/scopes.go). So it grants the
    -- items of the scan that come before its first item with touches, in
    -- claim order, and the batch takes that item and the rest after it,
    -- one single claim's statement each (fillScoped): the batch grants
    -- what a sequence of single claims would, in their order. (The items
    -- of the scan not granted are locked only until this statement's
    -- transaction ends.)
    SELECT s.project_id, s.id
    FROM scan s
    WHERE s.touches = '{}'
      AND NOT EXISTS (SELECT 1 FROM scan b
                      WHERE b.touches <> '{}'
                        AND (b.priority > s.priority OR (b.priority = s.priority AND b.seq < s.seq)))
), taken AS (
    UPDATE items i
    SET epoch = i.epoch + 1,
        active_lease_id = wg_uuid_v7(),
        preferred_worker = NULL,
        preferred_token = NULL,
        preferred_until = NULL,
        updated_at = coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
    -- By primary key (= ANY), never a join the planner could turn into a
    -- scan of the project's items.
    WHERE i.project_id = @project_id AND i.id = ANY (ARRAY(SELECT candidate.id FROM candidate))
    RETURNING i.*
), granted AS (
    INSERT INTO leases (project_id, id, item_id, epoch, worker, token_id, principal, acquired_at, expires_at,
                        budget_roots)
    SELECT taken.project_id, taken.active_lease_id, taken.id, taken.epoch, @worker, sqlc.narg('token_id'), @principal,
           grant_time.at,
           grant_time.at + sqlc.arg('ttl_ms')::bigint * interval '1 millisecond',
           taken.budget_roots
    FROM taken
    CROSS JOIN LATERAL (
        SELECT coalesce(sqlc.narg('now')::timestamptz,
                        greatest(clock_timestamp(),
                                 (SELECT p.ended_at FROM leases p
                                  WHERE p.project_id = taken.project_id AND p.item_id = taken.id
                                    AND p.epoch = taken.epoch - 1))) AS at,
               -- Set before each row is inserted (a volatile output, kept
               -- and evaluated per row): the row triggers of lease events
               -- skip this statement's rows, whose events granted_events
               -- writes (migration 00169).
               set_config('workgraph.lease_events', 'statement', true) AS events_by_statement
    ) AS grant_time
    ORDER BY taken.priority DESC, taken.seq
    RETURNING *
), granted_events AS (
    -- Each grant's lease.granted event, as the row trigger leases_event
    -- writes it (same columns, payload and actor), in grant order, all
    -- numbered before the statement's item events (written by the item
    -- trigger when the statement ends). The actor is set as the row
    -- trigger sets it, for the item events to read (events_actor()).
    INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
    SELECT g.project_id, 'lease.granted', g.acquired_at,
           set_config('workgraph.actor', 'worker:' || g.worker, true),
           g.item_id, g.id,
           jsonb_build_object('lease_id', g.id, 'item_id', g.item_id, 'epoch', g.epoch,
                              'worker', g.worker, 'expires_at', wg_json_time(g.expires_at))
    FROM granted g
    ORDER BY g.seq
)
SELECT sqlc.embed(leases), sqlc.embed(items),
       EXISTS (SELECT 1 FROM attention_requests r
               WHERE r.project_id = leases.project_id AND r.item_id = leases.item_id) AS has_attention,
       coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())::timestamptz AS db_now,
       -- Whether any item with touches is ready (the statement leaves
       -- those to the single claim's: lease.Service.fillScoped), read once
       -- from the small partial index items_ready_scoped: without one, an
       -- under-filled batch needs no statement more.
       -- (Items held by a live lease's scopes, migration 00167, are left
       -- out: the single claim would not take them either.)
       EXISTS (SELECT 1 FROM items s
               WHERE s.project_id = @project_id AND s.ready AND s.touches <> '{}'
                 AND NOT s.scope_held) AS scoped_ready
FROM granted AS leases
JOIN taken AS items ON items.project_id = leases.project_id AND items.id = leases.item_id
ORDER BY leases.seq;

-- name: CompleteLeases :many
-- EndLease as 'completed' for each entry of @entries (a JSON array of
-- {lease_id, epoch, result?, worker_time?, tokens_in?, tokens_out?,
-- cost_micro_usd?, tool_calls?}), each under its own fence: the
-- lease id and epoch match, it has not ended nor expired by the
-- statement's instant, and its item still names it as its active lease at
-- that epoch and is open. The items of the ended leases are marked done
-- with their results and freed in the same statement, and each ended lease
-- comes back with its item as the statement left it (nothing is read
-- back). Entries that match no lease are left out of the answer, and so
-- are those whose item waits for a dependency or an open child (added
-- while it was leased: lease.Service.CompleteBatch answers them blocked,
-- their leases stay live). A lease whose item changed under the statement
-- (a concurrent cancel, a dependency or child added) fails the
-- whole statement with WG003 (lease_fence_held, migration 00042), so that
-- no lease ends without its item and the caller sends it again. A
-- @token_id, when given, is the only token whose leases may be touched (an
-- agent acts on its own leases only).
WITH entry AS (
    SELECT (e->>'lease_id')::uuid AS lease_id,
           (e->>'epoch')::bigint AS epoch,
           e->'result' AS result,
           (e->>'worker_time')::timestamptz AS worker_time,
           coalesce((e->>'tokens_in')::bigint, 0) AS tokens_in,
           coalesce((e->>'tokens_out')::bigint, 0) AS tokens_out,
           coalesce((e->>'cost_micro_usd')::bigint, 0) AS cost_micro_usd,
           coalesce((e->>'tool_calls')::bigint, 0) AS tool_calls
    FROM jsonb_array_elements(@entries::jsonb) AS e
), t AS (
    -- (Volatile, so read once. workgraph.lease_events is set before the
    -- first lease row is updated: the row triggers of lease events and
    -- counters skip this statement's rows, whose events and counters
    -- ended_events and counted write, migration 00169.)
    SELECT coalesce(sqlc.narg('now')::timestamptz, clock_timestamp()) AS at,
           set_config('workgraph.lease_events', 'statement', true) AS events_by_statement
), ended AS (
    UPDATE leases l
    SET ended_at = coalesce(sqlc.narg('now')::timestamptz, greatest(t.at, l.acquired_at, l.heartbeat_at)),
        outcome = 'completed',
        outcome_detail = NULL,
        result = entry.result,
        worker_time = coalesce(entry.worker_time, l.worker_time),
        -- The entry's final usage, monotonic as in EndLease (absent: 0,
        -- which reports nothing).
        tokens_in = greatest(l.tokens_in, entry.tokens_in),
        tokens_out = greatest(l.tokens_out, entry.tokens_out),
        cost_micro_usd = greatest(l.cost_micro_usd, entry.cost_micro_usd),
        tool_calls = greatest(l.tool_calls, entry.tool_calls)
    FROM entry, t
    -- The leases by primary key (= ANY), then their entries.
    WHERE l.project_id = @project_id AND l.id = ANY (ARRAY(SELECT entry.lease_id FROM entry))
      AND l.id = entry.lease_id AND l.epoch = entry.epoch
      AND l.ended_at IS NULL
      AND l.expires_at > t.at
      AND (sqlc.narg('token_id')::uuid IS NULL OR l.token_id = sqlc.narg('token_id')::uuid)
      AND EXISTS (SELECT 1 FROM items i
                  WHERE i.project_id = l.project_id AND i.id = l.item_id
                    AND i.active_lease_id = l.id AND i.epoch = l.epoch AND i.status = 'open'
                    -- Not waiting for work added while it was leased (a
                    -- dependency, a child): such an entry is left out,
                    -- its lease live (migration 00064).
                    AND i.unmet_dependencies = 0 AND i.open_children = 0)
    RETURNING l.*
), freed AS (
    UPDATE items i
    SET active_lease_id = NULL,
        previous_worker = ended.worker,
        consecutive_expiries = 0,
        status = 'done',
        result = ended.result,
        finished_at = ended.ended_at,
        updated_at = ended.ended_at
    FROM ended
    WHERE i.project_id = @project_id AND i.id = ANY (ARRAY(SELECT ended.item_id FROM ended))
      AND i.id = ended.item_id
      AND i.active_lease_id = ended.id AND i.epoch = ended.epoch
      AND i.status = 'open'
      -- Checked again on the newest row version (a dependency or child
      -- added by a transaction that committed while this statement
      -- waited for the row): the counts then differ, WG003.
      AND i.unmet_dependencies = 0 AND i.open_children = 0
    RETURNING i.*
), ended_events AS (
    -- Each ended lease's lease.ended event, as the row trigger leases_event
    -- writes it for a completion (same columns, payload and actor), in the
    -- order the statement ended them (the order the row trigger fired in),
    -- all numbered before the statement's item events (written by the item
    -- trigger when the statement ends). The actor is set as the row trigger
    -- sets it, for the item events to read (events_actor()).
    INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
    SELECT e.project_id, 'lease.ended', e.ended_at,
           set_config('workgraph.actor', 'worker:' || e.worker, true),
           e.item_id, e.id,
           jsonb_build_object('lease_id', e.id, 'item_id', e.item_id, 'epoch', e.epoch,
                              'worker', e.worker, 'outcome', e.outcome)
    FROM ended e
), counted AS (
    -- The workers' outcome counters (count_ended_lease's, one upsert per
    -- worker instead of one per lease), in key order.
    INSERT INTO worker_outcome_counts AS c (project_id, worker, outcome, leases, last_seen)
    SELECT e.project_id, e.worker, e.outcome, count(*), max(greatest(e.acquired_at, e.heartbeat_at, e.ended_at))
    FROM ended e
    GROUP BY e.project_id, e.worker, e.outcome
    ORDER BY e.project_id, e.worker, e.outcome
    ON CONFLICT (project_id, worker, outcome) DO UPDATE
    SET leases = c.leases + EXCLUDED.leases,
        last_seen = greatest(c.last_seen, EXCLUDED.last_seen)
)
SELECT sqlc.embed(leases), sqlc.embed(items)
-- Every ended lease, each with the item it freed, else WG003: a left join,
-- so that an ended lease whose item the statement did not free is a row
-- the check sees even when no other lease of the batch ended (an inner
-- join of one ended lease and no freed item has no row to check, and
-- that lease would end without its item). lease_fence_held is not
-- strict, so the planner keeps the join outer.
FROM ended AS leases
LEFT JOIN freed AS items ON items.project_id = leases.project_id AND items.id = leases.item_id
WHERE lease_fence_held(CASE WHEN items.id IS NULL THEN 0 ELSE 1 END, true);

-- name: HeartbeatLeases :many
-- HeartbeatLease for each entry of @entries (a JSON array of {lease_id,
-- epoch, ttl_ms?, progress?, worker_time?, tokens_in?, tokens_out?,
-- cost_micro_usd?, tool_calls?}), each under its own fence; each entry's
-- usage is monotonic as in HeartbeatLease (absent: 0, which reports
-- nothing).
-- ttl_ms absent or 0 keeps the lease's current TTL. Entries that match no
-- lease are left out of the answer. @token_id as in CompleteLeases.
WITH entry AS (
    SELECT (e->>'lease_id')::uuid AS lease_id,
           (e->>'epoch')::bigint AS epoch,
           coalesce((e->>'ttl_ms')::bigint, 0) AS ttl_ms,
           e->'progress' AS progress,
           (e->>'worker_time')::timestamptz AS worker_time,
           coalesce((e->>'tokens_in')::bigint, 0) AS tokens_in,
           coalesce((e->>'tokens_out')::bigint, 0) AS tokens_out,
           coalesce((e->>'cost_micro_usd')::bigint, 0) AS cost_micro_usd,
           coalesce((e->>'tool_calls')::bigint, 0) AS tool_calls
    FROM jsonb_array_elements(@entries::jsonb) AS e
), t AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, clock_timestamp()) AS at
), renewed AS (
    UPDATE leases l
    SET expires_at = coalesce(sqlc.narg('now')::timestamptz, greatest(t.at, l.acquired_at, l.heartbeat_at)) + CASE
            WHEN entry.ttl_ms > 0 THEN entry.ttl_ms * interval '1 millisecond'
            ELSE l.expires_at - coalesce(l.heartbeat_at, l.acquired_at)
        END,
        heartbeat_at = coalesce(sqlc.narg('now')::timestamptz, greatest(t.at, l.acquired_at, l.heartbeat_at)),
        heartbeats = l.heartbeats + 1,
        progress = coalesce(entry.progress, l.progress),
        worker_time = coalesce(entry.worker_time, l.worker_time),
        -- progress_at moves only when the marker changes (as in
        -- HeartbeatLease, migration 00035).
        progress_at = CASE WHEN entry.progress IS NOT NULL AND entry.progress IS DISTINCT FROM l.progress
                           THEN coalesce(sqlc.narg('now')::timestamptz, greatest(t.at, l.acquired_at, l.heartbeat_at))
                           ELSE l.progress_at END,
        tokens_in = greatest(l.tokens_in, entry.tokens_in),
        tokens_out = greatest(l.tokens_out, entry.tokens_out),
        cost_micro_usd = greatest(l.cost_micro_usd, entry.cost_micro_usd),
        tool_calls = greatest(l.tool_calls, entry.tool_calls)
    FROM entry, t
    -- The leases by primary key (= ANY), then their entries.
    WHERE l.project_id = @project_id AND l.id = ANY (ARRAY(SELECT entry.lease_id FROM entry))
      AND l.id = entry.lease_id AND l.epoch = entry.epoch
      AND l.ended_at IS NULL
      AND l.expires_at > t.at
      AND (sqlc.narg('token_id')::uuid IS NULL OR l.token_id = sqlc.narg('token_id')::uuid)
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
