-- +goose NO TRANSACTION
-- +goose Up
-- A claim whose capabilities the items at the head of the claim order
-- exceed (a gpu worker behind a backlog of tpu items) finds the items it
-- can take without reading the others (docs/adr/0007-lean-hot-path.md,
-- "Addendum: claims by capability sets").
--
-- An item's requires must be among the claim's capabilities. A claim that
-- offers capabilities walked items_claim in claim order and threw away every
-- ready item whose requires it did not meet: a gpu worker behind 10,000 tpu
-- items read all of them at every claim, and when nothing it could take was
-- ready, the probes after the claim (ClaimNeedsTx, wg_claimable,
-- ClaimHopeless, MissingCapabilities) read them again before answering
-- no_match. A subset test has no ordered index, but the requires of a
-- project's ready items take few distinct values (the fleet's kinds of
-- machine), and each of them has an order of its own:
--
-- items_ready_restricted holds, by requires and then in claim order, the
-- ready items that require something. Its distinct requires are read by
-- skipping through it (wg_ready_requires: one descent per distinct value).
-- A claim with capabilities keeps the walk when it is short or cannot
-- discard anything for its capabilities: when every ready item's requires
-- are among them, when more than 64 distinct requires are ready (then
-- reading them costs more than the walk is likely to), and when one of the
-- first 64 items in claim order is one it can take. When none of the ready
-- requires is among them, it walks items_ready_unrestricted as a claim
-- without capabilities does (00104). Otherwise it reads, in claim order,
-- the merge of items_ready_unrestricted and of items_ready_restricted for
-- each requires it meets (wg_capability_branches), locking the first that
-- passes every filter of the walk. The predicates are the walk's on every
-- path; only the plan differs.
--
-- What the index costs: an entry when an item that requires something
-- becomes ready (created, released, its last dependency done). A claim and a
-- completion leave the item not ready and write none, as for items_claim.
-- A key is at most 32 requires of 64 characters (graph.MaxLabels,
-- MaxLabelChars), within a btree entry's bound. CONCURRENTLY, as in 00008.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_restricted ON items (project_id, requires, priority DESC, seq)
    WHERE ready AND requires <> '{}';

-- wg_ready_requires returns the distinct requires of the project's ready
-- items that require something, in the index's order, at most p_max + 1 of
-- them (one more than p_max tells a caller there are more): one descent of
-- items_ready_restricted per value, however many items carry it. PL/pgSQL,
-- not SQL: its plan is kept for the session, where a SQL function's body
-- that is not inlined is planned again at every call.
-- +goose StatementBegin
CREATE FUNCTION wg_ready_requires(p_project uuid, p_max int)
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
CREATE FUNCTION wg_requires_met(p_project uuid, p_capabilities text[])
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

-- wg_capability_branches chooses the search of a claim that offers
-- p_capabilities (not empty) and asks for p_labels:
--   * NULL: walk items_claim, as before (one of the first 64 items in
--     claim order can be taken by its requires and labels, asked first; or
--     every ready requires is met; or more than 64 distinct ones are
--     ready);
--   * '': none of the ready requires is met; only the items that require
--     nothing can be taken (items_ready_unrestricted, as 00104);
--   * otherwise a UNION ALL of ordered reads, one of
--     items_ready_unrestricted and one of items_ready_restricted per met
--     requires, each giving (priority, seq, id) of ready items with $1 as
--     the project: the caller merges them in claim order
--     (ORDER BY priority DESC, seq) and applies the walk's filters. Each
--     read has an ORDER BY of its own: a branch with a WHERE is not pulled
--     up into the union's append, and without its own order the planner
--     could only sort every row of every branch; with it, the union is a
--     Merge Append of index scans that stops at the first row taken.
-- The met requires are written into the text as literals (format's %L),
-- so that each read names its index's key.
-- +goose StatementBegin
CREATE FUNCTION wg_capability_branches(p_project uuid, p_labels text[], p_capabilities text[])
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

-- wg_claim_candidate (00104) with the choice of wg_capability_branches for
-- a claim that offers capabilities.
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

-- wg_claimable (00104), the probe after a claim that found nothing, with
-- the same choice.
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

-- +goose Down
-- The two functions as 00104 defined them.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claim_candidate(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                                              p_token_quiet int, p_capabilities text[], p_now timestamptz)
RETURNS TABLE (project_id uuid, id uuid, touches text[])
LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    IF p_labels <> '{}' AND wg_labels_rare(p_project, p_labels) THEN
        RETURN QUERY
        SELECT k.project_id, k.id, k.touches
        FROM wg_claim_candidate_by_labels(p_project, p_labels, p_worker, p_token, p_token_quiet,
                                          p_capabilities, p_now) AS k;
        RETURN;
    END IF;
    -- A claim that offers no capabilities can take only the items that
    -- require none: it walks their index, items_ready_unrestricted, in the
    -- same order ("c.requires = '{}'" names the index's predicate), so it
    -- never reads the items that require a capability.
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 THEN
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
BEGIN
    -- No labels (NULL, not '{}'): nothing carries them, as "labels @> NULL"
    -- says of every row, without reading one.
    IF p_labels IS NULL THEN
        RETURN false;
    END IF;
    IF p_labels <> '{}' AND wg_labels_rare(p_project, p_labels) THEN
        RETURN wg_claimable_by_labels(p_project, p_labels, p_worker, p_token, p_capabilities, p_now);
    END IF;
    -- No capabilities: only the items that require none, from their index,
    -- as wg_claim_candidate.
    IF cardinality(coalesce(p_capabilities, '{}')) = 0 THEN
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

DROP FUNCTION IF EXISTS wg_capability_branches(uuid, text[], text[]);
DROP FUNCTION IF EXISTS wg_requires_met(uuid, text[]);
DROP FUNCTION IF EXISTS wg_ready_requires(uuid, int);
DROP INDEX CONCURRENTLY IF EXISTS items_ready_restricted;
