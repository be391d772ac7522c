-- +goose NO TRANSACTION
-- +goose Up
-- A claim from a worker that offers no capabilities finds the first item
-- it can take without reading the ready items that require a capability
-- (docs/adr/0007-lean-hot-path.md, "Addendum: claims without
-- capabilities").
--
-- An item's requires must be among the claim's capabilities, so a worker
-- that offers none (the common worker) can take only the items that
-- require nothing. Its claim walked the claim index items_claim in order
-- and threw away every item that requires a capability on the way: a
-- fleet whose GPU items wait at the head of the claim order made every
-- claim of a worker without a GPU read all of them, and when nothing else
-- was ready, the probes after the claim (ClaimNeedsTx, ClaimHopeless) and
-- the transactional path read them again before answering no_match.
--
-- items_ready_unrestricted holds, in claim order, the ready items that
-- require nothing. A claim without capabilities walks it instead: the
-- one-statement claim's search (wg_claim_candidate) and the probe after a
-- claim that found nothing (wg_claimable) take a branch of their own, whose
-- query names the index's predicate (their plans are generic); the
-- statements planned for their parameters (ClaimItem, ClaimItems,
-- ClaimHopeless, ClaimNeedsTx, db/queries) say "requires = '{}' OR
-- (capabilities offered AND requires <@ them)", which folds to the
-- index's predicate when none are offered. A claim with capabilities walks
-- items_claim as before (it may take items of both kinds).
--
-- What the index costs: an entry when an item that requires nothing
-- becomes ready (created, released, its last dependency done). A claim and
-- a completion leave the item not ready and write none, as for items_claim.
-- CONCURRENTLY, as in 00008: building it does not block claims.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_unrestricted ON items (project_id, priority DESC, seq)
    WHERE ready AND requires = '{}';

-- wg_claim_candidate (00096) with the walk of items_ready_unrestricted for
-- a claim without capabilities.
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

-- wg_claimable (00096), the probe after a claim that found nothing, with
-- the same choice.
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

-- +goose Down
-- The two functions as 00096 defined them.
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
DROP INDEX CONCURRENTLY IF EXISTS items_ready_unrestricted;
