-- +goose NO TRANSACTION
-- +goose Up
-- Claims no longer walk the items that wait out a retry backoff
-- (docs/adr/0007-lean-hot-path.md, "Addendum: claims past retry
-- backoffs").
--
-- A failed item waits until not_before before it is retried, but it stays
-- ready (the stored column cannot depend on the clock), so every claim
-- index held it and every claim read it in priority order and threw it
-- away row by row: 3,000 high-priority items failing at once (a downstream
-- outage) made each claim, and each probe after a claim that found
-- nothing, read all 3,000 before the first item it could take.
--
-- in_backoff marks an item whose backoff may still be pending: the ending
-- statement of a failed lease sets it with not_before (EndLease), clearing
-- the retry clears both (ClearRetry), and the sweeper clears it once
-- not_before has passed (ClearDueBackoffs). It is a hint of where the item
-- is indexed, never a gate: not_before stays the gate, judged in every
-- claim as before. The claim indexes now hold the ready items NOT in
-- backoff (the queries name "NOT in_backoff"), and items_backoff holds the
-- ready items in backoff by (project, not_before), so "whose backoff has
-- passed" is a range at the front of it: a claim reads that range (none,
-- when the sweeper keeps up: one index page), takes the first such item
-- in claim order with every filter of the walk, and keeps it when it comes
-- before the walk's first item. So an item competes at its own priority
-- the instant its backoff passes, by the database's clock or the given
-- now, whether or not the sweeper has run; the sweeper only keeps that
-- range short.
--
-- The old indexes are replaced by new ones built CONCURRENTLY, then
-- dropped CONCURRENTLY, and the new ones take the old names. The labels'
-- GIN index (items_ready_labels, 00096) is kept as it is: its path reads
-- every ready item carrying a rare label (fewer than 2,000) and sorts them,
-- items in backoff among them, as before.
ALTER TABLE items ADD COLUMN IF NOT EXISTS in_backoff boolean NOT NULL DEFAULT false;

-- An item marked in backoff has the instant it waits for (a mark without
-- one would hide it from every claim). NOT VALID, then validated without
-- blocking writes.
ALTER TABLE items ADD CONSTRAINT items_backoff_instant CHECK (NOT in_backoff OR not_before IS NOT NULL) NOT VALID;
ALTER TABLE items VALIDATE CONSTRAINT items_backoff_instant;

-- The items whose backoff is still pending (few: failed items only).
UPDATE items SET in_backoff = true WHERE status = 'open' AND not_before > now() AND NOT in_backoff;

CREATE INDEX CONCURRENTLY IF NOT EXISTS items_claim_next ON items (project_id, priority DESC, seq)
    WHERE ready AND NOT in_backoff;
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_unrestricted_next ON items (project_id, priority DESC, seq)
    WHERE ready AND NOT in_backoff AND requires = '{}';
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_restricted_next ON items (project_id, requires, priority DESC, seq)
    WHERE ready AND NOT in_backoff AND requires <> '{}';
-- The ready items in backoff, by the instant it ends: a claim reads those
-- due (not_before <= now) from its front, the sweeper clears them.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_backoff ON items (project_id, not_before)
    WHERE ready AND in_backoff;

-- wg_ready_requires (00113) over the ready items not in backoff.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_ready_requires(p_project uuid, p_max int)
RETURNS SETOF text[]
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
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
$$;
-- +goose StatementEnd

-- wg_requires_met (00113): the ready items not in backoff as before, then
-- those in backoff (they will be claimable), read from items_backoff.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_requires_met(p_project uuid, p_capabilities text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
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
    RETURN EXISTS (SELECT 1 FROM items b
                   WHERE b.project_id = p_project AND b.ready AND b.in_backoff
                     AND b.requires <> '{}' AND b.requires <@ p_capabilities);
END;
$$;
-- +goose StatementEnd

-- wg_labels_rare (00096): the head of the claim order is that of the items
-- not in backoff.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_labels_rare(p_project uuid, p_labels text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
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
                                  WHERE m.project_id = p_project AND m.ready
                                    AND m.labels <> '{}' AND m.labels @> p_labels
                                  LIMIT 2000) AS carriers) < 2000;
END;
$$;
-- +goose StatementEnd

-- wg_capability_branches (00113) over the ready items not in backoff.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_capability_branches(p_project uuid, p_labels text[], p_capabilities text[])
RETURNS text
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
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
$$;
-- +goose StatementEnd

-- wg_claim_due is the first item in claim order whose retry backoff has
-- passed by p_now and that passes every filter and guard of the claim's
-- walk, locked (SKIP LOCKED), read from the front of items_backoff: none
-- when the sweeper keeps up, one index page. Its own function so that it
-- sorts the few due items with enable_sort on: under wg_claim_candidate's
-- enable_sort = off the sort's penalty took the plan's cost past
-- jit_above_cost, and each claim compiled it (seconds).
-- +goose StatementBegin
CREATE FUNCTION wg_claim_due(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                             p_token_quiet int, p_capabilities text[], p_now timestamptz)
RETURNS TABLE (project_id uuid, id uuid, touches text[], priority int, seq bigint)
LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_sort = on
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT d.project_id, d.id, d.touches, d.priority, d.seq
    FROM items d
    WHERE d.project_id = p_project
      AND d.ready
      AND d.in_backoff
      AND d.not_before <= p_now
      -- (Written so that the labels' GIN index, which an empty set would
      -- read whole, is not a path of the plan.)
      AND (p_labels = '{}' OR d.labels @> p_labels)
      AND (d.preferred_worker IS NULL
           OR (d.preferred_worker = p_worker AND d.preferred_token IS NOT DISTINCT FROM p_token)
           OR d.preferred_until <= p_now)
      AND coalesce((SELECT l.expires_at FROM leases l
                    WHERE l.project_id = p_project AND l.ended_at IS NULL
                    ORDER BY l.expires_at LIMIT 1) > p_now, true)
      AND (p_token_quiet = 0
           OR (SELECT count(*) FROM leases t
               WHERE t.token_id = p_token AND t.ended_at IS NULL AND t.expires_at > p_now)
              < p_token_quiet)
      AND (d.budget_roots = '{}' OR NOT wg_budgets_spent(d.project_id, d.budget_roots, p_now))
      AND d.requires <@ coalesce(p_capabilities, '{}')
      AND (d.touches = '{}' OR wg_scope_holder(d.project_id, NULL, d.touches, p_now) IS NULL)
    ORDER BY d.priority DESC, d.seq
    LIMIT 1
    FOR UPDATE OF d SKIP LOCKED;
END;
$$;
-- +goose StatementEnd

-- wg_claim_candidate (00113): each walk reads the items not in backoff;
-- the first item in claim order whose backoff has passed is read from
-- items_backoff with the same filters and guards ("due"), and it is the
-- candidate when it comes before the walk's. Both are locked (SKIP
-- LOCKED); the one not returned stays locked only until the claim's
-- statement ends, and only while an item is due and not yet swept.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claim_candidate(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                                              p_token_quiet int, p_capabilities text[], p_now timestamptz)
RETURNS TABLE (project_id uuid, id uuid, touches text[])
LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
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
$$;
-- +goose StatementEnd

-- wg_claimable (00113), the probe after a claim that found nothing: an
-- item whose backoff has passed (items_backoff), else the walks of the
-- items not in backoff.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claimable(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                             p_capabilities text[], p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
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
$$;
-- +goose StatementEnd

-- The new indexes take the old names (the functions above, and the
-- statements of db/queries, name their predicates).
DROP INDEX CONCURRENTLY IF EXISTS items_claim;
ALTER INDEX items_claim_next RENAME TO items_claim;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_unrestricted;
ALTER INDEX items_ready_unrestricted_next RENAME TO items_ready_unrestricted;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_restricted;
ALTER INDEX items_ready_restricted_next RENAME TO items_ready_restricted;

-- +goose Down
-- The indexes, functions and column as 00113 (and 00096 for
-- wg_labels_rare) left them.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_claim_prev ON items (project_id, priority DESC, seq) WHERE ready;
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_unrestricted_prev ON items (project_id, priority DESC, seq)
    WHERE ready AND requires = '{}';
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_restricted_prev ON items (project_id, requires, priority DESC, seq)
    WHERE ready AND requires <> '{}';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_labels_rare(p_project uuid, p_labels text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    IF p_labels = '{}' THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1
               FROM (SELECT h.labels FROM items h
                     WHERE h.project_id = p_project AND h.ready
                     ORDER BY h.priority DESC, h.seq
                     LIMIT 256) AS head
               WHERE head.labels @> p_labels) THEN
        RETURN false;
    END IF;
    RETURN (SELECT count(*) FROM (SELECT 1 FROM items m
                                  WHERE m.project_id = p_project AND m.ready
                                    AND m.labels <> '{}' AND m.labels @> p_labels
                                  LIMIT 2000) AS carriers) < 2000;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_ready_requires(p_project uuid, p_max int)
RETURNS SETOF text[]
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    WITH RECURSIVE seen (requires, n) AS (
        (SELECT i.requires, 1
         FROM items i
         WHERE i.project_id = p_project AND i.ready AND i.requires <> '{}'
         ORDER BY i.requires
         LIMIT 1)
        UNION ALL
        SELECT (SELECT i.requires
                FROM items i
                WHERE i.project_id = p_project AND i.ready AND i.requires <> '{}'
                  AND i.requires > seen.requires
                ORDER BY i.requires
                LIMIT 1),
               seen.n + 1
        FROM seen
        WHERE seen.requires IS NOT NULL AND seen.n <= p_max
    )
    SELECT seen.requires FROM seen WHERE seen.requires IS NOT NULL;
END;
$$;
-- +goose StatementEnd

-- wg_requires_met says whether one of the project's ready items requires
-- something, all of it among p_capabilities (the probes' question: can a
-- claim with these capabilities take an item that requires one). It asks
-- each distinct ready requires (wg_ready_requires); past 64 of them it
-- walks the claim order as before.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_requires_met(p_project uuid, p_capabilities text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
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
            RETURN (SELECT true FROM items i
                    WHERE i.project_id = p_project AND i.ready AND i.requires <> '{}'
                      AND i.requires <@ p_capabilities
                    ORDER BY i.priority DESC, i.seq
                    LIMIT 1) IS NOT NULL;
        END IF;
        IF r <@ p_capabilities THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_capability_branches(p_project uuid, p_labels text[], p_capabilities text[])
RETURNS text
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    r text[];
    n int := 0;
    met int := 0;
    branches text := '(SELECT i.priority, i.seq, i.id FROM items i '
                     'WHERE i.project_id = $1 AND i.ready AND i.requires = ''{}'' '
                     'ORDER BY i.priority DESC, i.seq)';
BEGIN
    -- The head first: when one of the first 64 items in claim order is one
    -- the claim can take, the walk is short and nothing else is read (the
    -- common case of a mixed fleet, one row or two).
    IF EXISTS (SELECT 1
               FROM (SELECT h.requires, h.labels FROM items h
                     WHERE h.project_id = p_project AND h.ready
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
                'WHERE i.project_id = $1 AND i.ready AND i.requires <> ''{}'' AND i.requires = %L::text[] '
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
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claim_candidate(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                                              p_token_quiet int, p_capabilities text[], p_now timestamptz)
RETURNS TABLE (project_id uuid, id uuid, touches text[])
LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    branches text;
BEGIN
    IF p_labels <> '{}' AND wg_labels_rare(p_project, p_labels) THEN
        RETURN QUERY
        SELECT k.project_id, k.id, k.touches
        FROM wg_claim_candidate_by_labels(p_project, p_labels, p_worker, p_token, p_token_quiet,
                                          p_capabilities, p_now) AS k;
        RETURN;
    END IF;
    IF cardinality(coalesce(p_capabilities, '{}')) > 0 THEN
        branches := wg_capability_branches(p_project, p_labels, p_capabilities);
    END IF;
    -- A claim that offers no capabilities, or none that a ready item's
    -- requires are among, can take only the items that require none: it
    -- walks their index, items_ready_unrestricted, in the same order
    -- ("c.requires = '{}'" names the index's predicate), so it never reads
    -- the items that require a capability.
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 OR branches = '' THEN
        RETURN QUERY
        SELECT c.project_id, c.id, c.touches
        FROM items c
        WHERE c.project_id = p_project
          AND c.ready
          AND c.requires = '{}'
          AND c.labels @> p_labels
          AND (c.not_before IS NULL OR c.not_before <= coalesce(p_now, statement_timestamp()))
          AND (c.preferred_worker IS NULL
               OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
               OR c.preferred_until <= coalesce(p_now, statement_timestamp()))
          AND coalesce((SELECT d.expires_at FROM leases d
                        WHERE d.project_id = p_project AND d.ended_at IS NULL
                        ORDER BY d.expires_at LIMIT 1)
                       > coalesce(p_now, statement_timestamp()), true)
          AND (p_token_quiet = 0
               OR (SELECT count(*) FROM leases t
                   WHERE t.token_id = p_token AND t.ended_at IS NULL
                     AND t.expires_at > coalesce(p_now, statement_timestamp()))
                  < p_token_quiet)
          AND (c.budget_roots = '{}'
               OR NOT wg_budgets_spent(c.project_id, c.budget_roots, coalesce(p_now, statement_timestamp())))
          AND (c.touches = '{}'
               OR wg_scope_holder(c.project_id, NULL, c.touches, coalesce(p_now, statement_timestamp())) IS NULL)
        ORDER BY c.priority DESC, c.seq
        LIMIT 1
        FOR UPDATE OF c SKIP LOCKED;
        RETURN;
    END IF;
    -- Past the items it cannot take: the merge of the ordered reads of the
    -- requires it meets, in claim order; each item is read again by its key
    -- and locked with the walk's filters (a row changed since the read is
    -- judged as it stands now).
    IF branches IS NOT NULL THEN
        RETURN QUERY EXECUTE
            'SELECT c.project_id, c.id, c.touches '
            'FROM (' || branches || ') AS o (priority, seq, id) '
            'CROSS JOIN LATERAL ('
            '    SELECT c.project_id, c.id, c.touches FROM items c '
            '    WHERE c.project_id = $1 AND c.id = o.id '
            '      AND c.ready '
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
        USING p_project, p_labels, p_worker, p_token, p_token_quiet, p_capabilities,
              coalesce(p_now, statement_timestamp());
        RETURN;
    END IF;
    RETURN QUERY
    SELECT c.project_id, c.id, c.touches
    FROM items c
    WHERE c.project_id = p_project
      AND c.ready
      AND c.labels @> p_labels
      AND (c.not_before IS NULL OR c.not_before <= coalesce(p_now, statement_timestamp()))
      AND (c.preferred_worker IS NULL
           OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
           OR c.preferred_until <= coalesce(p_now, statement_timestamp()))
      AND coalesce((SELECT d.expires_at FROM leases d
                    WHERE d.project_id = p_project AND d.ended_at IS NULL
                    ORDER BY d.expires_at LIMIT 1)
                   > coalesce(p_now, statement_timestamp()), true)
      AND (p_token_quiet = 0
           OR (SELECT count(*) FROM leases t
               WHERE t.token_id = p_token AND t.ended_at IS NULL
                 AND t.expires_at > coalesce(p_now, statement_timestamp()))
              < p_token_quiet)
      AND (c.budget_roots = '{}'
           OR NOT wg_budgets_spent(c.project_id, c.budget_roots, coalesce(p_now, statement_timestamp())))
      AND c.requires <@ coalesce(p_capabilities, '{}')
      AND (c.touches = '{}'
           OR wg_scope_holder(c.project_id, NULL, c.touches, coalesce(p_now, statement_timestamp())) IS NULL)
    ORDER BY c.priority DESC, c.seq
    LIMIT 1
    FOR UPDATE OF c SKIP LOCKED;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claimable(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                             p_capabilities text[], p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    branches text;
    v_found boolean;
BEGIN
    -- No labels (NULL, not '{}'): nothing carries them, as "labels @> NULL"
    -- says of every row, without reading one.
    IF p_labels IS NULL THEN
        RETURN false;
    END IF;
    IF p_labels <> '{}' AND wg_labels_rare(p_project, p_labels) THEN
        RETURN wg_claimable_by_labels(p_project, p_labels, p_worker, p_token, p_capabilities, p_now);
    END IF;
    IF cardinality(coalesce(p_capabilities, '{}')) > 0 THEN
        branches := wg_capability_branches(p_project, p_labels, p_capabilities);
    END IF;
    -- No capabilities, or none a ready item's requires are among: only the
    -- items that require none, from their index, as wg_claim_candidate.
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 OR branches = '' THEN
        RETURN EXISTS (
            SELECT 1 FROM (
                SELECT 1 FROM items c
                WHERE c.project_id = p_project
                  AND c.ready
                  AND c.requires = '{}'
                  AND c.labels @> p_labels
                  AND (c.not_before IS NULL OR c.not_before <= coalesce(p_now, statement_timestamp()))
                  AND (c.preferred_worker IS NULL
                       OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
                       OR c.preferred_until <= coalesce(p_now, statement_timestamp()))
                  AND (c.budget_roots = '{}'
                       OR NOT wg_budgets_spent(c.project_id, c.budget_roots, coalesce(p_now, statement_timestamp())))
                  AND (c.touches = '{}'
                       OR wg_scope_holder(c.project_id, NULL, c.touches, coalesce(p_now, statement_timestamp())) IS NULL)
                ORDER BY c.priority DESC, c.seq
                LIMIT 1) AS first);
    END IF;
    IF branches IS NOT NULL THEN
        EXECUTE
            'SELECT EXISTS (SELECT 1 FROM ('
            '    SELECT 1 FROM (' || branches || ') AS o (priority, seq, id) '
            '    JOIN items c ON c.project_id = $1 AND c.id = o.id '
            '    WHERE c.ready '
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
        USING p_project, p_labels, p_worker, p_token, p_capabilities, coalesce(p_now, statement_timestamp());
        RETURN v_found;
    END IF;
    RETURN EXISTS (
        SELECT 1 FROM (
            SELECT 1 FROM items c
            WHERE c.project_id = p_project
              AND c.ready
              AND c.labels @> p_labels
              AND (c.not_before IS NULL OR c.not_before <= coalesce(p_now, statement_timestamp()))
              AND (c.preferred_worker IS NULL
                   OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
                   OR c.preferred_until <= coalesce(p_now, statement_timestamp()))
              AND c.requires <@ coalesce(p_capabilities, '{}')
              AND (c.budget_roots = '{}'
                   OR NOT wg_budgets_spent(c.project_id, c.budget_roots, coalesce(p_now, statement_timestamp())))
              AND (c.touches = '{}'
                   OR wg_scope_holder(c.project_id, NULL, c.touches, coalesce(p_now, statement_timestamp())) IS NULL)
            ORDER BY c.priority DESC, c.seq
            LIMIT 1) AS first);
END;
$$;
-- +goose StatementEnd

DROP INDEX CONCURRENTLY IF EXISTS items_claim;
ALTER INDEX items_claim_prev RENAME TO items_claim;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_unrestricted;
ALTER INDEX items_ready_unrestricted_prev RENAME TO items_ready_unrestricted;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_restricted;
ALTER INDEX items_ready_restricted_prev RENAME TO items_ready_restricted;
DROP FUNCTION IF EXISTS wg_claim_due(uuid, text[], text, uuid, int, text[], timestamptz);
DROP INDEX CONCURRENTLY IF EXISTS items_backoff;
ALTER TABLE items DROP CONSTRAINT IF EXISTS items_backoff_instant;
ALTER TABLE items DROP COLUMN IF EXISTS in_backoff;
