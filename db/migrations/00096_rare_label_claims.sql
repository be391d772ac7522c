-- +goose NO TRANSACTION
-- +goose Up
-- A claim that asks for labels few ready items carry finds them through an
-- index of the ready items' labels instead of walking the whole ready set
-- (docs/adr/0007-lean-hot-path.md, "Addendum: claims by rare labels").
--
-- The one-statement claim's search (wg_claim_candidate, 00046) walks the
-- claim index items_claim in order and stops at the first item that passes
-- its filters: at once when the first ready items carry the labels, but a
-- worker asking for a label that only the last few ready items carry, or
-- none, read every ready item of the project first (about 40 ms a claim at
-- 100,000 ready items, and the same again in ClaimNeedsTx's "missed" probe
-- after each claim that found nothing). A long-polling worker with such a
-- label paid it at every wake-up of its project.
--
-- A claim with labels now looks at the head of the claim order first
-- (wg_labels_rare: the first 256 ready items). When one of them carries the
-- labels, the walk is as short as before and is kept, and so it is when
-- 2,000 ready items or more carry them. Otherwise the search reads the
-- items that carry the labels from items_ready_labels (the project and the
-- labels of the ready items that have labels, a GIN index over both
-- columns through btree_gin) and takes the first of them in claim order:
-- its cost grows with the ready items carrying the labels (fewer than
-- 2,000), never with the whole ready set. The predicates are the same on
-- both paths; only the plan differs.
--
-- The index holds ready items with labels only: a claim, which makes the
-- item not ready, and a completion write no entry in it; an item enters it
-- when it becomes ready (created, released, its last dependency done).
-- btree_gin is a trusted contrib extension (a database owner may create
-- it), shipped with PostgreSQL as pg_trgm (00020) is.
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- CONCURRENTLY, as in 00008: building it does not block claims. Without
-- GIN's pending list (fastupdate off, as leases_live_scope_keys in 00041):
-- each search would otherwise read the whole list of recent insertions
-- until a vacuum merges it, so a claim's cost would follow how many items
-- became ready lately; an item that becomes ready pays its entries at once.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_labels ON items USING gin (project_id, labels)
    WITH (fastupdate = off) WHERE ready AND labels <> '{}';

-- wg_labels_rare says whether a claim for p_labels should read the items
-- that carry them from items_ready_labels rather than walk the claim order:
-- p_labels is not empty, none of the project's first 256 ready items
-- (items_claim, in claim order) carries them, and fewer than 2,000 of its
-- ready items do. The first probe stops at the first item carrying the
-- labels, so a label the head carries costs a row or two. The count stops
-- at 2,000: a label that many items carry is left to the walk, as before
-- 00096, because the index's path reads and sorts every item carrying it,
-- while the walk stops at the first; below that the sort costs a few
-- milliseconds at most, where the walk past the head could read every
-- ready item. (A label that 2,000 items or more carry, none of them near
-- the head, pays the count on top of the walk: 2,000 rows read through the
-- index.) Only the labels are judged: the other filters (time gates,
-- reservations, budgets, capabilities, scopes) are the walk's, as before.
-- +goose StatementBegin
CREATE FUNCTION wg_labels_rare(p_project uuid, p_labels text[])
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

-- wg_claim_candidate_by_labels is wg_claim_candidate's search for labels
-- that few ready items carry, none near the head of the claim order: the
-- same predicates, read from items_ready_labels ("c.labels <> '{}'" names
-- the index's predicate) and ordered by a sort of the items that carry the
-- labels (enable_sort on, which its caller, wg_claim_candidate, turns off
-- for its own walk). The generic plan is the index's: the planner cannot
-- tell how many items carry unknown labels and estimates few, which is the
-- case wg_labels_rare sends here.
-- +goose StatementBegin
CREATE FUNCTION wg_claim_candidate_by_labels(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                                             p_token_quiet int, p_capabilities text[], p_now timestamptz)
RETURNS TABLE (project_id uuid, id uuid, touches text[])
LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_sort = on
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT c.project_id, c.id, c.touches
    FROM items c
    WHERE c.project_id = p_project
      AND c.ready
      AND c.labels <> '{}'
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

-- wg_claim_candidate (00046) with the choice of path: the walk of the claim
-- order, unchanged, unless wg_labels_rare says the labels are rare and far
-- down it.
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

-- wg_claimable is ClaimNeedsTx's "missed" probe (see db/queries/lease.sql):
-- whether an item a claim with these filters could take is ready, locked
-- or not, by the same choice of path as wg_claim_candidate. Without the
-- claim's two guards (the expired-lease and token checks), which
-- ClaimNeedsTx judges on its own.
-- +goose StatementBegin
CREATE FUNCTION wg_claimable(p_project uuid, p_labels text[], p_worker text, p_token uuid,
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

-- +goose StatementBegin
CREATE FUNCTION wg_claimable_by_labels(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                                       p_capabilities text[], p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = on
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN EXISTS (
        SELECT 1 FROM items c
        WHERE c.project_id = p_project
          AND c.ready
          AND c.labels <> '{}'
          AND c.labels @> p_labels
          AND (c.not_before IS NULL OR c.not_before <= coalesce(p_now, statement_timestamp()))
          AND (c.preferred_worker IS NULL
               OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
               OR c.preferred_until <= coalesce(p_now, statement_timestamp()))
          AND c.requires <@ coalesce(p_capabilities, '{}')
          AND (c.budget_roots = '{}'
               OR NOT wg_budgets_spent(c.project_id, c.budget_roots, coalesce(p_now, statement_timestamp())))
          AND (c.touches = '{}'
               OR wg_scope_holder(c.project_id, NULL, c.touches, coalesce(p_now, statement_timestamp())) IS NULL));
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- wg_claim_candidate as 00046 defined it. btree_gin stays: other objects
-- may use it, and it holds no data.
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
DROP FUNCTION IF EXISTS wg_claimable(uuid, text[], text, uuid, text[], timestamptz);
DROP FUNCTION IF EXISTS wg_claimable_by_labels(uuid, text[], text, uuid, text[], timestamptz);
DROP FUNCTION IF EXISTS wg_claim_candidate_by_labels(uuid, text[], text, uuid, int, text[], timestamptz);
DROP FUNCTION IF EXISTS wg_labels_rare(uuid, text[]);
DROP INDEX CONCURRENTLY IF EXISTS items_ready_labels;
