-- +goose NO TRANSACTION
-- +goose Up
-- Claims no longer walk the ready items whose write scopes a live lease of
-- another item holds (docs/adr/0007-lean-hot-path.md, "Addendum: claims
-- past held write scopes").
--
-- An item with touches that overlap a live lease's scopes stays ready, so
-- every claim index held it and every claim read it in priority order and
-- threw it away row by row (wg_scope_holder): 300 items sharing 32
-- wildcard scopes behind one live lease made each claim, and each probe
-- after a claim that found nothing, test all 300 before the first item it
-- could take.
--
-- items.scope_held says where the item is indexed, never whether it may be
-- claimed: every claim still tests wg_scope_holder, and the grant's scope
-- locks (wg_lock_scopes) stay the gate. The claim indexes hold the ready
-- items neither in backoff nor held (the queries name "NOT scope_held").
--   * Set: when a live lease with scopes is inserted (the grant), the ready
--     items whose touches overlap its scopes are marked, in the granting
--     statement (a row trigger on leases; the grant holds its scope locks
--     and waits on no row while it does, so rows another transaction holds
--     are skipped: such an item stays unmarked, and claims test it as
--     before). A mark is committed only with the live lease that made it.
--   * Cleared: when a lease with scopes ends (every path: the ending
--     statement, a batch completion, the reap of an expired lease, a
--     cancellation; a trigger on leases.ended_at, so none is missed), the
--     marked items whose touches overlap its scopes and that no other live
--     lease overlaps are unmarked, judged under scope locks (those of the
--     lease's scopes and of the items' touches, wg_release_scoped_items):
--     two leases that hold one item and end at once never each count the
--     other as live, and a grant that marks an item is seen. A claim that
--     takes a marked item clears its mark.
--     Rows another transaction holds are skipped (left to the sweep).
--   * Swept: the lease sweeper unmarks the marked items that no live lease
--     overlaps (ClearStaleScopeHolds), so a mark no end cleared (an edit of
--     the touches, a skipped row) hides no item for longer than a sweep.
--   * An edit of an item's touches clears its mark (UpdateItemFields).
-- A cleared item that is ready wakes the project's waiting claims
-- (workgraph_ready with the project alone, once per ending lease).
--
-- Items that become ready while an overlapping lease is live are not
-- marked; claims walk and test them as before.
ALTER TABLE items ADD COLUMN IF NOT EXISTS scope_held boolean NOT NULL DEFAULT false;

CREATE INDEX CONCURRENTLY IF NOT EXISTS items_claim_next ON items (project_id, priority DESC, seq)
    WHERE ready AND NOT in_backoff AND NOT scope_held;
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_unrestricted_next ON items (project_id, priority DESC, seq)
    WHERE ready AND NOT in_backoff AND NOT scope_held AND requires = '{}';
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_restricted_next ON items (project_id, requires, priority DESC, seq)
    WHERE ready AND NOT in_backoff AND NOT scope_held AND requires <> '{}';
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_scoped_next ON items (project_id)
    WHERE ready AND touches <> '{}' AND NOT scope_held;
-- The items a grant may mark (ready) and an end may clear (marked), by the
-- keys of their touches (wg_scope_keys, 00041): a lease's scopes find them
-- through wg_scope_probe, as a candidate's touches find the live leases.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_scope_keys ON items USING gin (project_id, wg_scope_keys(touches))
    WITH (fastupdate = off)
    WHERE touches <> '{}' AND (ready OR scope_held);
-- The marked items (the sweep, and the probes that count held items as
-- ready).
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_scope_held ON items (project_id) WHERE scope_held;

-- wg_ready_requires: as before, over the ready items neither in backoff nor held.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_ready_requires(p_project uuid, p_max integer)
 RETURNS SETOF text[]
 LANGUAGE plpgsql
 STABLE
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET jit TO 'off'
AS $function$
BEGIN
    RETURN QUERY
    WITH RECURSIVE seen (requires, n) AS (
        (SELECT i.requires, 1
         FROM items i
         WHERE i.project_id = p_project AND i.ready AND NOT i.in_backoff AND NOT i.scope_held AND i.requires <> '{}'
         ORDER BY i.requires
         LIMIT 1)
        UNION ALL
        SELECT (SELECT i.requires
                FROM items i
                WHERE i.project_id = p_project AND i.ready AND NOT i.in_backoff AND NOT i.scope_held AND i.requires <> '{}'
                  AND i.requires > seen.requires
                ORDER BY i.requires
                LIMIT 1),
               seen.n + 1
        FROM seen
        WHERE seen.requires IS NOT NULL AND seen.n <= p_max
    )
    SELECT seen.requires FROM seen WHERE seen.requires IS NOT NULL;
END;
$function$;

-- +goose StatementEnd

-- wg_requires_met: as before, over the ready items neither in backoff nor held.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_requires_met(p_project uuid, p_capabilities text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    r text[];
    n int := 0;
BEGIN
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 THEN
        RETURN false;
    END IF;
    FOR r IN SELECT s FROM wg_ready_requires(p_project, 64) AS s LOOP
        n := n + 1;
        IF n > 64 THEN
            IF (SELECT true FROM items i
                WHERE i.project_id = p_project AND i.ready AND NOT i.in_backoff AND NOT i.scope_held AND i.requires <> '{}'
                  AND i.requires <@ p_capabilities
                ORDER BY i.priority DESC, i.seq
                LIMIT 1) IS NOT NULL THEN
                RETURN true;
            END IF;
            EXIT;
        END IF;
        IF r <@ p_capabilities THEN
            RETURN true;
        END IF;
    END LOOP;
    FOR r IN SELECT s FROM wg_backoff_requires(p_project, 2147483647) AS s LOOP
        IF r <@ p_capabilities THEN
            RETURN true;
        END IF;
    END LOOP;
    -- The ready items a live lease's scopes hold (items_scope_held,
    -- migration 00167): claimable once that lease ends.
    RETURN EXISTS (SELECT 1 FROM items h
                   WHERE h.project_id = p_project AND h.scope_held AND h.ready
                     AND h.requires <> '{}' AND h.requires <@ p_capabilities);
END;
$$;

-- +goose StatementEnd

-- wg_labels_rare: as before, over the ready items neither in backoff nor held.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_labels_rare(p_project uuid, p_labels text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    IF p_labels = '{}' THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1
               FROM (SELECT h.labels FROM items h
                     WHERE h.project_id = p_project AND h.ready AND NOT h.in_backoff AND NOT h.scope_held
                     ORDER BY h.priority DESC, h.seq
                     LIMIT 256) AS head
               WHERE head.labels @> p_labels) THEN
        RETURN false;
    END IF;
    RETURN (SELECT count(*) FROM (SELECT 1 FROM items m
                                  WHERE m.project_id = p_project AND m.ready AND NOT m.in_backoff
                                    AND m.labels <> '{}' AND m.labels @> p_labels
                                  LIMIT 2000) AS carriers) < 2000;
END;
$$;

-- +goose StatementEnd

-- wg_capability_branches: as before, over the ready items neither in backoff nor held.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_capability_branches(p_project uuid, p_labels text[], p_capabilities text[])
 RETURNS text
 LANGUAGE plpgsql
 STABLE
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET jit TO 'off'
AS $function$
DECLARE
    r text[];
    n int := 0;
    met int := 0;
    branches text := '(SELECT i.priority, i.seq, i.id FROM items i '
                     'WHERE i.project_id = $1 AND i.ready AND NOT i.in_backoff AND NOT i.scope_held AND i.requires = ''{}'' '
                     'ORDER BY i.priority DESC, i.seq)';
BEGIN
    IF EXISTS (SELECT 1
               FROM (SELECT h.requires, h.labels FROM items h
                     WHERE h.project_id = p_project AND h.ready AND NOT h.in_backoff AND NOT h.scope_held
                     ORDER BY h.priority DESC, h.seq
                     LIMIT 64) AS head
               WHERE head.requires <@ p_capabilities AND head.labels @> p_labels) THEN
        RETURN NULL;
    END IF;
    FOR r IN SELECT s FROM wg_ready_requires(p_project, 64) AS s LOOP
        n := n + 1;
        IF n > 64 THEN
            RETURN NULL;
        END IF;
        IF r <@ p_capabilities THEN
            met := met + 1;
            branches := branches || format(
                ' UNION ALL (SELECT i.priority, i.seq, i.id FROM items i '
                'WHERE i.project_id = $1 AND i.ready AND NOT i.in_backoff AND NOT i.scope_held AND i.requires <> ''{}'' '
                'AND i.requires = %L::text[] '
                'ORDER BY i.priority DESC, i.seq)', r);
        END IF;
    END LOOP;
    IF met = 0 THEN
        RETURN '';
    END IF;
    IF met = n THEN
        RETURN NULL;
    END IF;
    RETURN branches;
END;
$function$;

-- +goose StatementEnd

-- wg_claim_candidate: as before, over the ready items neither in backoff nor held.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claim_candidate(p_project uuid, p_labels text[], p_worker text, p_token uuid, p_token_quiet integer, p_capabilities text[], p_now timestamp with time zone)
 RETURNS TABLE(project_id uuid, id uuid, touches text[])
 LANGUAGE plpgsql
 ROWS 1
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
    branches text;
    v_now timestamptz := coalesce(p_now, statement_timestamp());
    due record;
    walk record;
    -- The walk reads no further than the due item (an index condition on
    -- priority, then seq): it never locks an item after it, which a
    -- concurrent claim would then skip.
    v_floor int;
BEGIN
    IF p_labels <> '{}' AND wg_labels_rare(p_project, p_labels) THEN
        RETURN QUERY
        SELECT k.project_id, k.id, k.touches
        FROM wg_claim_candidate_by_labels(p_project, p_labels, p_worker, p_token, p_token_quiet,
                                          p_capabilities, p_now) AS k;
        RETURN;
    END IF;
    SELECT k.project_id, k.id, k.touches, k.priority, k.seq INTO due
    FROM wg_claim_due(p_project, p_labels, p_worker, p_token, p_token_quiet, p_capabilities, v_now) AS k;
    v_floor := coalesce(due.priority, -2147483648);
    IF cardinality(coalesce(p_capabilities, '{}')) > 0 THEN
        branches := wg_capability_branches(p_project, p_labels, p_capabilities);
    END IF;
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 OR branches = '' THEN
        SELECT c.project_id, c.id, c.touches, c.priority, c.seq INTO walk
        FROM items c
        WHERE c.project_id = p_project
          AND c.ready
          AND NOT c.in_backoff AND NOT c.scope_held
          AND c.priority >= v_floor
          AND (due.id IS NULL OR c.priority > due.priority OR c.seq < due.seq)
          AND c.requires = '{}'
          AND c.labels @> p_labels
          AND (c.not_before IS NULL OR c.not_before <= v_now)
          AND (c.preferred_worker IS NULL
               OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
               OR c.preferred_until <= v_now)
          AND coalesce((SELECT l.expires_at FROM leases l
                        WHERE l.project_id = p_project AND l.ended_at IS NULL
                        ORDER BY l.expires_at LIMIT 1) > v_now, true)
          AND (p_token_quiet = 0
               OR (SELECT count(*) FROM leases t
                   WHERE t.token_id = p_token AND t.ended_at IS NULL AND t.expires_at > v_now)
                  < p_token_quiet)
          AND (c.budget_roots = '{}' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, v_now))
          AND (c.touches = '{}' OR wg_scope_holder(c.project_id, NULL, c.touches, v_now) IS NULL)
        ORDER BY c.priority DESC, c.seq
        LIMIT 1
        FOR UPDATE OF c SKIP LOCKED;
    ELSIF branches IS NOT NULL THEN
        EXECUTE
            'SELECT c.project_id, c.id, c.touches, o.priority, o.seq '
            'FROM (' || replace(branches, 'ORDER BY i.priority DESC', 'AND i.priority >= $8 ORDER BY i.priority DESC')
                     || ') AS o (priority, seq, id) '
            'CROSS JOIN LATERAL ('
            '    SELECT c.project_id, c.id, c.touches FROM items c '
            '    WHERE c.project_id = $1 AND c.id = o.id '
            '      AND c.ready '
            '      AND NOT c.in_backoff AND NOT c.scope_held '
            '      AND ($9::uuid IS NULL OR o.priority > $8 OR o.seq < $10) '
            '      AND c.labels @> $2 '
            '      AND (c.not_before IS NULL OR c.not_before <= $7) '
            '      AND (c.preferred_worker IS NULL '
            '           OR (c.preferred_worker = $3 AND c.preferred_token IS NOT DISTINCT FROM $4) '
            '           OR c.preferred_until <= $7) '
            '      AND (c.budget_roots = ''{}'' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, $7)) '
            '      AND c.requires <@ $6 '
            '      AND (c.touches = ''{}'' OR wg_scope_holder(c.project_id, NULL, c.touches, $7) IS NULL) '
            '    FOR UPDATE OF c SKIP LOCKED) AS c '
            'WHERE coalesce((SELECT d.expires_at FROM leases d '
            '                WHERE d.project_id = $1 AND d.ended_at IS NULL '
            '                ORDER BY d.expires_at LIMIT 1) > $7, true) '
            '  AND ($5 = 0 '
            '       OR (SELECT count(*) FROM leases t '
            '           WHERE t.token_id = $4 AND t.ended_at IS NULL AND t.expires_at > $7) < $5) '
            'ORDER BY o.priority DESC, o.seq '
            'LIMIT 1'
        INTO walk
        USING p_project, p_labels, p_worker, p_token, p_token_quiet, p_capabilities, v_now,
              v_floor, due.id, due.seq;
    ELSE
        SELECT c.project_id, c.id, c.touches, c.priority, c.seq INTO walk
        FROM items c
        WHERE c.project_id = p_project
          AND c.ready
          AND NOT c.in_backoff AND NOT c.scope_held
          AND c.priority >= v_floor
          AND (due.id IS NULL OR c.priority > due.priority OR c.seq < due.seq)
          AND c.labels @> p_labels
          AND (c.not_before IS NULL OR c.not_before <= v_now)
          AND (c.preferred_worker IS NULL
               OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
               OR c.preferred_until <= v_now)
          AND coalesce((SELECT l.expires_at FROM leases l
                        WHERE l.project_id = p_project AND l.ended_at IS NULL
                        ORDER BY l.expires_at LIMIT 1) > v_now, true)
          AND (p_token_quiet = 0
               OR (SELECT count(*) FROM leases t
                   WHERE t.token_id = p_token AND t.ended_at IS NULL AND t.expires_at > v_now)
                  < p_token_quiet)
          AND (c.budget_roots = '{}' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, v_now))
          AND c.requires <@ coalesce(p_capabilities, '{}')
          AND (c.touches = '{}' OR wg_scope_holder(c.project_id, NULL, c.touches, v_now) IS NULL)
        ORDER BY c.priority DESC, c.seq
        LIMIT 1
        FOR UPDATE OF c SKIP LOCKED;
    END IF;
    IF due.id IS NOT NULL
       AND (walk.id IS NULL OR due.priority > walk.priority
            OR (due.priority = walk.priority AND due.seq < walk.seq)) THEN
        RETURN QUERY SELECT due.project_id, due.id, due.touches;
    ELSIF walk.id IS NOT NULL THEN
        RETURN QUERY SELECT walk.project_id, walk.id, walk.touches;
    END IF;
END;
$function$;

-- +goose StatementEnd

-- wg_claimable: as before, over the ready items neither in backoff nor held.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claimable(p_project uuid, p_labels text[], p_worker text, p_token uuid, p_capabilities text[], p_now timestamp with time zone)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET jit TO 'off'
AS $function$
DECLARE
    branches text;
    v_found boolean;
    v_now timestamptz := coalesce(p_now, statement_timestamp());
BEGIN
    IF p_labels IS NULL THEN
        RETURN false;
    END IF;
    IF p_labels <> '{}' AND wg_labels_rare(p_project, p_labels) THEN
        RETURN wg_claimable_by_labels(p_project, p_labels, p_worker, p_token, p_capabilities, p_now);
    END IF;
    IF EXISTS (SELECT 1 FROM items d
               WHERE d.project_id = p_project
                 AND d.ready
                 AND d.in_backoff
                 AND d.not_before <= v_now
                 AND (p_labels = '{}' OR d.labels @> p_labels)
                 AND (d.preferred_worker IS NULL
                      OR (d.preferred_worker = p_worker AND d.preferred_token IS NOT DISTINCT FROM p_token)
                      OR d.preferred_until <= v_now)
                 AND d.requires <@ coalesce(p_capabilities, '{}')
                 AND (d.budget_roots = '{}' OR NOT wg_budgets_spent(d.project_id, d.budget_roots, v_now))
                 AND (d.touches = '{}' OR wg_scope_holder(d.project_id, NULL, d.touches, v_now) IS NULL)) THEN
        RETURN true;
    END IF;
    IF cardinality(coalesce(p_capabilities, '{}')) > 0 THEN
        branches := wg_capability_branches(p_project, p_labels, p_capabilities);
    END IF;
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 OR branches = '' THEN
        RETURN EXISTS (
            SELECT 1 FROM (
                SELECT 1 FROM items c
                WHERE c.project_id = p_project
                  AND c.ready
                  AND NOT c.in_backoff AND NOT c.scope_held
                  AND c.requires = '{}'
                  AND c.labels @> p_labels
                  AND (c.not_before IS NULL OR c.not_before <= v_now)
                  AND (c.preferred_worker IS NULL
                       OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
                       OR c.preferred_until <= v_now)
                  AND (c.budget_roots = '{}' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, v_now))
                  AND (c.touches = '{}' OR wg_scope_holder(c.project_id, NULL, c.touches, v_now) IS NULL)
                ORDER BY c.priority DESC, c.seq
                LIMIT 1) AS first);
    END IF;
    IF branches IS NOT NULL THEN
        EXECUTE
            'SELECT EXISTS (SELECT 1 FROM ('
            '    SELECT 1 FROM (' || branches || ') AS o (priority, seq, id) '
            '    JOIN items c ON c.project_id = $1 AND c.id = o.id '
            '    WHERE c.ready '
            '      AND NOT c.in_backoff AND NOT c.scope_held '
            '      AND c.labels @> $2 '
            '      AND (c.not_before IS NULL OR c.not_before <= $6) '
            '      AND (c.preferred_worker IS NULL '
            '           OR (c.preferred_worker = $3 AND c.preferred_token IS NOT DISTINCT FROM $4) '
            '           OR c.preferred_until <= $6) '
            '      AND c.requires <@ $5 '
            '      AND (c.budget_roots = ''{}'' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, $6)) '
            '      AND (c.touches = ''{}'' OR wg_scope_holder(c.project_id, NULL, c.touches, $6) IS NULL) '
            '    ORDER BY o.priority DESC, o.seq '
            '    LIMIT 1) AS first)'
        INTO v_found
        USING p_project, p_labels, p_worker, p_token, p_capabilities, v_now;
        RETURN v_found;
    END IF;
    RETURN EXISTS (
        SELECT 1 FROM (
            SELECT 1 FROM items c
            WHERE c.project_id = p_project
              AND c.ready
              AND NOT c.in_backoff AND NOT c.scope_held
              AND c.labels @> p_labels
              AND (c.not_before IS NULL OR c.not_before <= v_now)
              AND (c.preferred_worker IS NULL
                   OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
                   OR c.preferred_until <= v_now)
              AND c.requires <@ coalesce(p_capabilities, '{}')
              AND (c.budget_roots = '{}' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, v_now))
              AND (c.touches = '{}' OR wg_scope_holder(c.project_id, NULL, c.touches, v_now) IS NULL)
            ORDER BY c.priority DESC, c.seq
            LIMIT 1) AS first);
END;
$function$;

-- +goose StatementEnd

DROP INDEX CONCURRENTLY IF EXISTS items_claim;
ALTER INDEX items_claim_next RENAME TO items_claim;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_unrestricted;
ALTER INDEX items_ready_unrestricted_next RENAME TO items_ready_unrestricted;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_restricted;
ALTER INDEX items_ready_restricted_next RENAME TO items_ready_restricted;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_scoped;
ALTER INDEX items_ready_scoped_next RENAME TO items_ready_scoped;

-- wg_hold_scoped_items: after a live lease with scopes is inserted (a
-- grant), mark the ready items whose touches overlap its scopes. Rows
-- another transaction holds are skipped: the grant holds its scope locks
-- and waits on no row while it does (00041, 00151); a skipped item stays
-- unmarked, which hides nothing.
-- +goose StatementBegin
CREATE FUNCTION wg_hold_scoped_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE items y
    SET scope_held = true
    FROM (SELECT z.id
          FROM items z
          WHERE z.project_id = NEW.project_id
            AND z.touches <> '{}' AND z.ready AND NOT z.scope_held
            AND wg_scope_keys(z.touches) && wg_scope_probe(NEW.scopes)
            AND z.id <> NEW.item_id
            AND wg_scopes_overlap(z.touches, NEW.scopes)
          FOR NO KEY UPDATE OF z SKIP LOCKED) AS s
    WHERE y.project_id = NEW.project_id AND y.id = s.id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- wg_lock_scope_set takes the advisory locks of a set of scopes as
-- wg_lock_scopes (00041, 00151) takes a grant's, in the order of their
-- numbers: per resource, and per resource and literal first segment, so
-- that the locks of two overlapping scopes conflict. Above 64 locks it
-- takes each resource's lock exclusive instead (a superset of the same
-- conflicts, for a set as wide as many items' touches). With p_try it
-- only takes locks that are free and answers false at the first that is
-- not (the locks it took stay until the transaction ends).
-- +goose StatementBegin
CREATE FUNCTION wg_lock_scope_set(p_project uuid, p_scopes text[], p_try boolean)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    locks bigint[];
    exclusive boolean[];
BEGIN
    SELECT array_agg(k.h ORDER BY k.h), array_agg(k.x ORDER BY k.h) INTO locks, exclusive
    FROM (SELECT hashtextextended(p_project::text || ':' || l.k, 7250019) AS h, bool_or(l.x) AS x
          FROM unnest(p_scopes) AS s,
               LATERAL (SELECT split_part(s, ':', 1) AS res, wg_scope_first(s) AS first) AS p,
               LATERAL (VALUES (p.res, p.first = '*'),
                               (CASE WHEN p.first = '*' THEN NULL ELSE p.res || '/' || p.first END, true)) AS l(k, x)
          WHERE l.k IS NOT NULL
          GROUP BY 1) AS k;
    IF cardinality(locks) > 64 THEN
        SELECT array_agg(k.h ORDER BY k.h), array_agg(true) INTO locks, exclusive
        FROM (SELECT DISTINCT hashtextextended(p_project::text || ':' || split_part(s, ':', 1), 7250019) AS h
              FROM unnest(p_scopes) AS s) AS k;
    END IF;
    FOR i IN 1 .. coalesce(cardinality(locks), 0) LOOP
        IF NOT p_try THEN
            IF exclusive[i] THEN
                PERFORM pg_advisory_xact_lock(locks[i]);
            ELSE
                PERFORM pg_advisory_xact_lock_shared(locks[i]);
            END IF;
        ELSIF NOT (CASE WHEN exclusive[i] THEN pg_try_advisory_xact_lock(locks[i])
                        ELSE pg_try_advisory_xact_lock_shared(locks[i]) END) THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END;
$$;
-- +goose StatementEnd

-- wg_release_scoped_items: after a lease with scopes ends, unmark the
-- marked items whose touches overlap its scopes and that no other live
-- lease overlaps, judged under scope locks: those of the ended lease's
-- scopes and of the touches of the marked items it overlaps (one set,
-- taken in order). The judgement is a statement of its own, run once the
-- locks are held, so its snapshot (the function is VOLATILE) sees every
-- transaction that held a conflicting lock before as committed:
--   * a grant that marked one of the items holds the locks of its scopes,
--     which overlap the item's touches: its lease is seen live;
--   * another end, of a lease that overlaps one of the items, holds the
--     locks of that lease's scopes, which conflict with the locks of the
--     item's touches taken here: its lease is seen ended. So two ends of
--     the leases that hold an item never each count the other as live
--     and both leave the mark.
-- Rows another transaction holds are skipped, as a grant skips them: a
-- claim holds the item it found while it waits for the scope locks held
-- here, and waiting for its row would close a cycle. A claim that takes
-- such an item clears its mark (ClaimItemDirect, ClaimItem); one that
-- does not leaves it to the sweep.
-- The locks of the ended lease's scopes are taken even when it overlaps
-- no marked item: the end of another lease that holds an item with this
-- one judges under the locks of the item's touches, which conflict with
-- them, and so sees this lease ended (the judgement below finds the
-- items again with its own snapshot). A transaction that already holds
-- scope locks (a keyed batch claim that reaps, 00151) takes the locks
-- only if they are free, and otherwise leaves the marks to the sweep
-- (ClearStaleScopeHolds).
-- +goose StatementBegin
CREATE FUNCTION wg_release_scoped_items() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    probe text[] := wg_scope_probe(NEW.scopes);
    touched text[];
    n int;
BEGIN
    -- (Without a marked item in the project, one probe of
    -- items_scope_held answers both reads below: nothing to lock or
    -- unmark but the lease's own scopes.)
    IF EXISTS (SELECT 1 FROM items h WHERE h.project_id = NEW.project_id AND h.scope_held) THEN
        SELECT coalesce(array_agg(DISTINCT t), '{}') INTO touched
        FROM items z, unnest(z.touches) AS t
        WHERE z.project_id = NEW.project_id
          AND z.scope_held AND z.touches <> '{}'
          AND wg_scope_keys(z.touches) && probe
          AND wg_scopes_overlap(z.touches, NEW.scopes);
    ELSE
        touched := '{}';
    END IF;
    IF NOT wg_lock_scope_set(NEW.project_id, NEW.scopes || touched,
                             coalesce(current_setting('workgraph.scope_locks_held', true), '') = 'on') THEN
        RETURN NULL;
    END IF;
    -- A grant later in this transaction (a claim that reaped first) then
    -- only tries its locks (wg_lock_scopes): a transaction waits for a
    -- grant's scope locks only while it holds none.
    PERFORM set_config('workgraph.scope_end_locks_held', 'on', true);
    IF NOT EXISTS (SELECT 1 FROM items h WHERE h.project_id = NEW.project_id AND h.scope_held) THEN
        RETURN NULL;
    END IF;
    UPDATE items y
    SET scope_held = false
    FROM (SELECT z.id
          FROM items z
          WHERE z.project_id = NEW.project_id
            AND z.scope_held AND z.touches <> '{}'
            AND wg_scope_keys(z.touches) && probe
            AND wg_scopes_overlap(z.touches, NEW.scopes)
            AND wg_scope_holder(z.project_id, NULL, z.touches, NULL) IS NULL
          FOR NO KEY UPDATE OF z SKIP LOCKED) AS s
    WHERE y.project_id = NEW.project_id AND y.id = s.id;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        -- Claims waiting on the project look again (ready items became
        -- claimable; no item became ready, so items_ready_update is silent).
        PERFORM pg_notify('workgraph_ready', NEW.project_id::text);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- wg_lock_scopes (00151): a transaction whose lease ends took scope locks
-- (wg_release_scoped_items) takes a grant's locks only if they are free,
-- as one that holds a grant's does.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_lock_scopes(p_project uuid, p_lease uuid, p_scopes text[], p_at timestamptz)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    held uuid;
    holding boolean := coalesce(current_setting('workgraph.scope_locks_held', true), '') = 'on'
                       OR coalesce(current_setting('workgraph.scope_end_locks_held', true), '') = 'on';
BEGIN
    FOR r IN
        SELECT hashtextextended(p_project::text || ':' || l.k, 7250019) AS h, bool_or(l.x) AS x
        FROM unnest(p_scopes) AS s,
             LATERAL (SELECT split_part(s, ':', 1) AS res, wg_scope_first(s) AS first) AS p,
             LATERAL (VALUES (p.res, p.first = '*'),
                             (CASE WHEN p.first = '*' THEN NULL ELSE p.res || '/' || p.first END, true)) AS l(k, x)
        WHERE l.k IS NOT NULL
        GROUP BY 1 ORDER BY 1
    LOOP
        IF NOT holding THEN
            IF r.x THEN
                PERFORM pg_advisory_xact_lock(r.h);
            ELSE
                PERFORM pg_advisory_xact_lock_shared(r.h);
            END IF;
        ELSIF NOT (CASE WHEN r.x THEN pg_try_advisory_xact_lock(r.h)
                        ELSE pg_try_advisory_xact_lock_shared(r.h) END) THEN
            RAISE EXCEPTION 'a concurrent claim holds a lock of the write scopes %', p_scopes USING ERRCODE = 'WG002';
        END IF;
    END LOOP;
    PERFORM set_config('workgraph.scope_locks_held', 'on', true);
    -- The fresh snapshot: this function is VOLATILE, so the assignment's
    -- query takes a new one; wg_scope_holder (STABLE) reads with it.
    held := wg_scope_holder(p_project, p_lease, p_scopes, coalesce(p_at, clock_timestamp()));
    IF held IS NOT NULL THEN
        RAISE EXCEPTION 'lease % holds a write scope overlapping %', held, p_scopes USING ERRCODE = 'WG002';
    END IF;
    RETURN true;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER leases_hold_scoped_items AFTER INSERT ON leases
    FOR EACH ROW WHEN (NEW.ended_at IS NULL AND NEW.scope_keys <> '{}')
    EXECUTE FUNCTION wg_hold_scoped_items();
CREATE TRIGGER leases_release_scoped_items AFTER UPDATE OF ended_at ON leases
    FOR EACH ROW WHEN (OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL AND NEW.scope_keys <> '{}')
    EXECUTE FUNCTION wg_release_scoped_items();

-- +goose Down
DROP TRIGGER IF EXISTS leases_hold_scoped_items ON leases;
DROP TRIGGER IF EXISTS leases_release_scoped_items ON leases;
DROP FUNCTION IF EXISTS wg_hold_scoped_items();
DROP FUNCTION IF EXISTS wg_release_scoped_items();
DROP FUNCTION IF EXISTS wg_lock_scope_set(uuid, text[], boolean);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_lock_scopes(p_project uuid, p_lease uuid, p_scopes text[], p_at timestamptz)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    held uuid;
    holding boolean := coalesce(current_setting('workgraph.scope_locks_held', true), '') = 'on';
BEGIN
    FOR r IN
        SELECT hashtextextended(p_project::text || ':' || l.k, 7250019) AS h, bool_or(l.x) AS x
        FROM unnest(p_scopes) AS s,
             LATERAL (SELECT split_part(s, ':', 1) AS res, wg_scope_first(s) AS first) AS p,
             LATERAL (VALUES (p.res, p.first = '*'),
                             (CASE WHEN p.first = '*' THEN NULL ELSE p.res || '/' || p.first END, true)) AS l(k, x)
        WHERE l.k IS NOT NULL
        GROUP BY 1 ORDER BY 1
    LOOP
        IF NOT holding THEN
            IF r.x THEN
                PERFORM pg_advisory_xact_lock(r.h);
            ELSE
                PERFORM pg_advisory_xact_lock_shared(r.h);
            END IF;
        ELSIF NOT (CASE WHEN r.x THEN pg_try_advisory_xact_lock(r.h)
                        ELSE pg_try_advisory_xact_lock_shared(r.h) END) THEN
            RAISE EXCEPTION 'a concurrent claim holds a lock of the write scopes %', p_scopes USING ERRCODE = 'WG002';
        END IF;
    END LOOP;
    PERFORM set_config('workgraph.scope_locks_held', 'on', true);
    -- The fresh snapshot: this function is VOLATILE, so the assignment's
    -- query takes a new one; wg_scope_holder (STABLE) reads with it.
    held := wg_scope_holder(p_project, p_lease, p_scopes, coalesce(p_at, clock_timestamp()));
    IF held IS NOT NULL THEN
        RAISE EXCEPTION 'lease % holds a write scope overlapping %', held, p_scopes USING ERRCODE = 'WG002';
    END IF;
    RETURN true;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_ready_requires(p_project uuid, p_max integer)
 RETURNS SETOF text[]
 LANGUAGE plpgsql
 STABLE
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET jit TO 'off'
AS $function$
BEGIN
    RETURN QUERY
    WITH RECURSIVE seen (requires, n) AS (
        (SELECT i.requires, 1
         FROM items i
         WHERE i.project_id = p_project AND i.ready AND NOT i.in_backoff AND i.requires <> '{}'
         ORDER BY i.requires
         LIMIT 1)
        UNION ALL
        SELECT (SELECT i.requires
                FROM items i
                WHERE i.project_id = p_project AND i.ready AND NOT i.in_backoff AND i.requires <> '{}'
                  AND i.requires > seen.requires
                ORDER BY i.requires
                LIMIT 1),
               seen.n + 1
        FROM seen
        WHERE seen.requires IS NOT NULL AND seen.n <= p_max
    )
    SELECT seen.requires FROM seen WHERE seen.requires IS NOT NULL;
END;
$function$;

-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_requires_met(p_project uuid, p_capabilities text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    r text[];
    n int := 0;
BEGIN
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 THEN
        RETURN false;
    END IF;
    FOR r IN SELECT s FROM wg_ready_requires(p_project, 64) AS s LOOP
        n := n + 1;
        IF n > 64 THEN
            IF (SELECT true FROM items i
                WHERE i.project_id = p_project AND i.ready AND NOT i.in_backoff AND i.requires <> '{}'
                  AND i.requires <@ p_capabilities
                ORDER BY i.priority DESC, i.seq
                LIMIT 1) IS NOT NULL THEN
                RETURN true;
            END IF;
            EXIT;
        END IF;
        IF r <@ p_capabilities THEN
            RETURN true;
        END IF;
    END LOOP;
    FOR r IN SELECT s FROM wg_backoff_requires(p_project, 2147483647) AS s LOOP
        IF r <@ p_capabilities THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END;
$$;

-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_labels_rare(p_project uuid, p_labels text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    IF p_labels = '{}' THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1
               FROM (SELECT h.labels FROM items h
                     WHERE h.project_id = p_project AND h.ready AND NOT h.in_backoff
                     ORDER BY h.priority DESC, h.seq
                     LIMIT 256) AS head
               WHERE head.labels @> p_labels) THEN
        RETURN false;
    END IF;
    RETURN (SELECT count(*) FROM (SELECT 1 FROM items m
                                  WHERE m.project_id = p_project AND m.ready AND NOT m.in_backoff
                                    AND m.labels <> '{}' AND m.labels @> p_labels
                                  LIMIT 2000) AS carriers) < 2000;
END;
$$;

-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_capability_branches(p_project uuid, p_labels text[], p_capabilities text[])
 RETURNS text
 LANGUAGE plpgsql
 STABLE
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET jit TO 'off'
AS $function$
DECLARE
    r text[];
    n int := 0;
    met int := 0;
    branches text := '(SELECT i.priority, i.seq, i.id FROM items i '
                     'WHERE i.project_id = $1 AND i.ready AND NOT i.in_backoff AND i.requires = ''{}'' '
                     'ORDER BY i.priority DESC, i.seq)';
BEGIN
    IF EXISTS (SELECT 1
               FROM (SELECT h.requires, h.labels FROM items h
                     WHERE h.project_id = p_project AND h.ready AND NOT h.in_backoff
                     ORDER BY h.priority DESC, h.seq
                     LIMIT 64) AS head
               WHERE head.requires <@ p_capabilities AND head.labels @> p_labels) THEN
        RETURN NULL;
    END IF;
    FOR r IN SELECT s FROM wg_ready_requires(p_project, 64) AS s LOOP
        n := n + 1;
        IF n > 64 THEN
            RETURN NULL;
        END IF;
        IF r <@ p_capabilities THEN
            met := met + 1;
            branches := branches || format(
                ' UNION ALL (SELECT i.priority, i.seq, i.id FROM items i '
                'WHERE i.project_id = $1 AND i.ready AND NOT i.in_backoff AND i.requires <> ''{}'' '
                'AND i.requires = %L::text[] '
                'ORDER BY i.priority DESC, i.seq)', r);
        END IF;
    END LOOP;
    IF met = 0 THEN
        RETURN '';
    END IF;
    IF met = n THEN
        RETURN NULL;
    END IF;
    RETURN branches;
END;
$function$;

-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claim_candidate(p_project uuid, p_labels text[], p_worker text, p_token uuid, p_token_quiet integer, p_capabilities text[], p_now timestamp with time zone)
 RETURNS TABLE(project_id uuid, id uuid, touches text[])
 LANGUAGE plpgsql
 ROWS 1
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
    branches text;
    v_now timestamptz := coalesce(p_now, statement_timestamp());
    due record;
    walk record;
    -- The walk reads no further than the due item (an index condition on
    -- priority, then seq): it never locks an item after it, which a
    -- concurrent claim would then skip.
    v_floor int;
BEGIN
    IF p_labels <> '{}' AND wg_labels_rare(p_project, p_labels) THEN
        RETURN QUERY
        SELECT k.project_id, k.id, k.touches
        FROM wg_claim_candidate_by_labels(p_project, p_labels, p_worker, p_token, p_token_quiet,
                                          p_capabilities, p_now) AS k;
        RETURN;
    END IF;
    SELECT k.project_id, k.id, k.touches, k.priority, k.seq INTO due
    FROM wg_claim_due(p_project, p_labels, p_worker, p_token, p_token_quiet, p_capabilities, v_now) AS k;
    v_floor := coalesce(due.priority, -2147483648);
    IF cardinality(coalesce(p_capabilities, '{}')) > 0 THEN
        branches := wg_capability_branches(p_project, p_labels, p_capabilities);
    END IF;
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 OR branches = '' THEN
        SELECT c.project_id, c.id, c.touches, c.priority, c.seq INTO walk
        FROM items c
        WHERE c.project_id = p_project
          AND c.ready
          AND NOT c.in_backoff
          AND c.priority >= v_floor
          AND (due.id IS NULL OR c.priority > due.priority OR c.seq < due.seq)
          AND c.requires = '{}'
          AND c.labels @> p_labels
          AND (c.not_before IS NULL OR c.not_before <= v_now)
          AND (c.preferred_worker IS NULL
               OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
               OR c.preferred_until <= v_now)
          AND coalesce((SELECT l.expires_at FROM leases l
                        WHERE l.project_id = p_project AND l.ended_at IS NULL
                        ORDER BY l.expires_at LIMIT 1) > v_now, true)
          AND (p_token_quiet = 0
               OR (SELECT count(*) FROM leases t
                   WHERE t.token_id = p_token AND t.ended_at IS NULL AND t.expires_at > v_now)
                  < p_token_quiet)
          AND (c.budget_roots = '{}' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, v_now))
          AND (c.touches = '{}' OR wg_scope_holder(c.project_id, NULL, c.touches, v_now) IS NULL)
        ORDER BY c.priority DESC, c.seq
        LIMIT 1
        FOR UPDATE OF c SKIP LOCKED;
    ELSIF branches IS NOT NULL THEN
        EXECUTE
            'SELECT c.project_id, c.id, c.touches, o.priority, o.seq '
            'FROM (' || replace(branches, 'ORDER BY i.priority DESC', 'AND i.priority >= $8 ORDER BY i.priority DESC')
                     || ') AS o (priority, seq, id) '
            'CROSS JOIN LATERAL ('
            '    SELECT c.project_id, c.id, c.touches FROM items c '
            '    WHERE c.project_id = $1 AND c.id = o.id '
            '      AND c.ready '
            '      AND NOT c.in_backoff '
            '      AND ($9::uuid IS NULL OR o.priority > $8 OR o.seq < $10) '
            '      AND c.labels @> $2 '
            '      AND (c.not_before IS NULL OR c.not_before <= $7) '
            '      AND (c.preferred_worker IS NULL '
            '           OR (c.preferred_worker = $3 AND c.preferred_token IS NOT DISTINCT FROM $4) '
            '           OR c.preferred_until <= $7) '
            '      AND (c.budget_roots = ''{}'' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, $7)) '
            '      AND c.requires <@ $6 '
            '      AND (c.touches = ''{}'' OR wg_scope_holder(c.project_id, NULL, c.touches, $7) IS NULL) '
            '    FOR UPDATE OF c SKIP LOCKED) AS c '
            'WHERE coalesce((SELECT d.expires_at FROM leases d '
            '                WHERE d.project_id = $1 AND d.ended_at IS NULL '
            '                ORDER BY d.expires_at LIMIT 1) > $7, true) '
            '  AND ($5 = 0 '
            '       OR (SELECT count(*) FROM leases t '
            '           WHERE t.token_id = $4 AND t.ended_at IS NULL AND t.expires_at > $7) < $5) '
            'ORDER BY o.priority DESC, o.seq '
            'LIMIT 1'
        INTO walk
        USING p_project, p_labels, p_worker, p_token, p_token_quiet, p_capabilities, v_now,
              v_floor, due.id, due.seq;
    ELSE
        SELECT c.project_id, c.id, c.touches, c.priority, c.seq INTO walk
        FROM items c
        WHERE c.project_id = p_project
          AND c.ready
          AND NOT c.in_backoff
          AND c.priority >= v_floor
          AND (due.id IS NULL OR c.priority > due.priority OR c.seq < due.seq)
          AND c.labels @> p_labels
          AND (c.not_before IS NULL OR c.not_before <= v_now)
          AND (c.preferred_worker IS NULL
               OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
               OR c.preferred_until <= v_now)
          AND coalesce((SELECT l.expires_at FROM leases l
                        WHERE l.project_id = p_project AND l.ended_at IS NULL
                        ORDER BY l.expires_at LIMIT 1) > v_now, true)
          AND (p_token_quiet = 0
               OR (SELECT count(*) FROM leases t
                   WHERE t.token_id = p_token AND t.ended_at IS NULL AND t.expires_at > v_now)
                  < p_token_quiet)
          AND (c.budget_roots = '{}' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, v_now))
          AND c.requires <@ coalesce(p_capabilities, '{}')
          AND (c.touches = '{}' OR wg_scope_holder(c.project_id, NULL, c.touches, v_now) IS NULL)
        ORDER BY c.priority DESC, c.seq
        LIMIT 1
        FOR UPDATE OF c SKIP LOCKED;
    END IF;
    IF due.id IS NOT NULL
       AND (walk.id IS NULL OR due.priority > walk.priority
            OR (due.priority = walk.priority AND due.seq < walk.seq)) THEN
        RETURN QUERY SELECT due.project_id, due.id, due.touches;
    ELSIF walk.id IS NOT NULL THEN
        RETURN QUERY SELECT walk.project_id, walk.id, walk.touches;
    END IF;
END;
$function$;

-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claimable(p_project uuid, p_labels text[], p_worker text, p_token uuid, p_capabilities text[], p_now timestamp with time zone)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET jit TO 'off'
AS $function$
DECLARE
    branches text;
    v_found boolean;
    v_now timestamptz := coalesce(p_now, statement_timestamp());
BEGIN
    IF p_labels IS NULL THEN
        RETURN false;
    END IF;
    IF p_labels <> '{}' AND wg_labels_rare(p_project, p_labels) THEN
        RETURN wg_claimable_by_labels(p_project, p_labels, p_worker, p_token, p_capabilities, p_now);
    END IF;
    IF EXISTS (SELECT 1 FROM items d
               WHERE d.project_id = p_project
                 AND d.ready
                 AND d.in_backoff
                 AND d.not_before <= v_now
                 AND (p_labels = '{}' OR d.labels @> p_labels)
                 AND (d.preferred_worker IS NULL
                      OR (d.preferred_worker = p_worker AND d.preferred_token IS NOT DISTINCT FROM p_token)
                      OR d.preferred_until <= v_now)
                 AND d.requires <@ coalesce(p_capabilities, '{}')
                 AND (d.budget_roots = '{}' OR NOT wg_budgets_spent(d.project_id, d.budget_roots, v_now))
                 AND (d.touches = '{}' OR wg_scope_holder(d.project_id, NULL, d.touches, v_now) IS NULL)) THEN
        RETURN true;
    END IF;
    IF cardinality(coalesce(p_capabilities, '{}')) > 0 THEN
        branches := wg_capability_branches(p_project, p_labels, p_capabilities);
    END IF;
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 OR branches = '' THEN
        RETURN EXISTS (
            SELECT 1 FROM (
                SELECT 1 FROM items c
                WHERE c.project_id = p_project
                  AND c.ready
                  AND NOT c.in_backoff
                  AND c.requires = '{}'
                  AND c.labels @> p_labels
                  AND (c.not_before IS NULL OR c.not_before <= v_now)
                  AND (c.preferred_worker IS NULL
                       OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
                       OR c.preferred_until <= v_now)
                  AND (c.budget_roots = '{}' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, v_now))
                  AND (c.touches = '{}' OR wg_scope_holder(c.project_id, NULL, c.touches, v_now) IS NULL)
                ORDER BY c.priority DESC, c.seq
                LIMIT 1) AS first);
    END IF;
    IF branches IS NOT NULL THEN
        EXECUTE
            'SELECT EXISTS (SELECT 1 FROM ('
            '    SELECT 1 FROM (' || branches || ') AS o (priority, seq, id) '
            '    JOIN items c ON c.project_id = $1 AND c.id = o.id '
            '    WHERE c.ready '
            '      AND NOT c.in_backoff '
            '      AND c.labels @> $2 '
            '      AND (c.not_before IS NULL OR c.not_before <= $6) '
            '      AND (c.preferred_worker IS NULL '
            '           OR (c.preferred_worker = $3 AND c.preferred_token IS NOT DISTINCT FROM $4) '
            '           OR c.preferred_until <= $6) '
            '      AND c.requires <@ $5 '
            '      AND (c.budget_roots = ''{}'' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, $6)) '
            '      AND (c.touches = ''{}'' OR wg_scope_holder(c.project_id, NULL, c.touches, $6) IS NULL) '
            '    ORDER BY o.priority DESC, o.seq '
            '    LIMIT 1) AS first)'
        INTO v_found
        USING p_project, p_labels, p_worker, p_token, p_capabilities, v_now;
        RETURN v_found;
    END IF;
    RETURN EXISTS (
        SELECT 1 FROM (
            SELECT 1 FROM items c
            WHERE c.project_id = p_project
              AND c.ready
              AND NOT c.in_backoff
              AND c.labels @> p_labels
              AND (c.not_before IS NULL OR c.not_before <= v_now)
              AND (c.preferred_worker IS NULL
                   OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
                   OR c.preferred_until <= v_now)
              AND c.requires <@ coalesce(p_capabilities, '{}')
              AND (c.budget_roots = '{}' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, v_now))
              AND (c.touches = '{}' OR wg_scope_holder(c.project_id, NULL, c.touches, v_now) IS NULL)
            ORDER BY c.priority DESC, c.seq
            LIMIT 1) AS first);
END;
$function$;

-- +goose StatementEnd
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_claim_prev ON items (project_id, priority DESC, seq)
    WHERE ready AND NOT in_backoff;
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_unrestricted_prev ON items (project_id, priority DESC, seq)
    WHERE ready AND NOT in_backoff AND requires = '{}';
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_restricted_prev ON items (project_id, requires, priority DESC, seq)
    WHERE ready AND NOT in_backoff AND requires <> '{}';
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_scoped_prev ON items (project_id) WHERE ready AND touches <> '{}';
DROP INDEX CONCURRENTLY IF EXISTS items_claim;
ALTER INDEX items_claim_prev RENAME TO items_claim;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_unrestricted;
ALTER INDEX items_ready_unrestricted_prev RENAME TO items_ready_unrestricted;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_restricted;
ALTER INDEX items_ready_restricted_prev RENAME TO items_ready_restricted;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_scoped;
ALTER INDEX items_ready_scoped_prev RENAME TO items_ready_scoped;
DROP INDEX CONCURRENTLY IF EXISTS items_scope_keys;
DROP INDEX CONCURRENTLY IF EXISTS items_scope_held;
ALTER TABLE items DROP COLUMN IF EXISTS scope_held;
