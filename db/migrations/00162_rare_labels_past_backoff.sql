-- +goose NO TRANSACTION
-- +goose Up
-- The rare-label path no longer reads the items in a retry backoff that
-- carry the labels (docs/adr/0007-lean-hot-path.md, "Addendum: claims past
-- retry backoffs").
--
-- A claim for labels that few ready items carry, none near the head of
-- the claim order, reads the items that carry them from the labels' GIN
-- index (items_ready_labels, 00096) and sorts them. 00141 took the items
-- in backoff out of the claim indexes but left them in this one, so a
-- label carried by many failing items (a downstream outage of one kind of
-- work) made each such claim, and the probe after one that found nothing,
-- read them all (up to 2,000, the path's own bound) and throw them away
-- for their not_before. The index now holds the ready items not in
-- backoff, as the claim indexes do; the items whose backoff has passed
-- and is not yet swept are read from the front of items_backoff, as every
-- other search reads them, and merged in claim order. The count that
-- decides the path (wg_labels_rare) counts the carriers not in backoff:
-- the ones the path reads.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_labels_next ON items USING gin (project_id, labels)
    WITH (fastupdate = off) WHERE ready AND NOT in_backoff AND labels <> '{}';

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

-- wg_claim_candidate_by_labels (00096): the carriers not in backoff, from
-- items_ready_labels, and the carriers whose backoff has passed, from the
-- front of items_backoff (written so that no GIN index of the labels is a
-- path of that read, as in wg_claim_due), each
-- sorted, merged in claim order (a Merge Append: nothing is locked before
-- the order is known); each is read again by its key and locked (SKIP LOCKED)
-- with every filter judged on the row as it stands, and the first that
-- locks is the candidate: nothing else is locked.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claim_candidate_by_labels(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                                                        p_token_quiet int, p_capabilities text[], p_now timestamptz)
RETURNS TABLE (project_id uuid, id uuid, touches text[])
LANGUAGE plpgsql VOLATILE ROWS 1
SET enable_sort = on
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, statement_timestamp());
BEGIN
    -- The guards of the claim's statement (ClaimItemDirect): a lease of
    -- the project past its expiry, or the token at its quiet limit.
    IF NOT coalesce((SELECT l.expires_at FROM leases l
                     WHERE l.project_id = p_project AND l.ended_at IS NULL
                     ORDER BY l.expires_at LIMIT 1) > v_now, true)
       OR (p_token_quiet > 0
           AND (SELECT count(*) FROM leases t
                WHERE t.token_id = p_token AND t.ended_at IS NULL AND t.expires_at > v_now)
               >= p_token_quiet) THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT k.project_id, k.id, k.touches
    FROM ((SELECT c.id, c.priority, c.seq
           FROM items c
           WHERE c.project_id = p_project
             AND c.ready
             AND NOT c.in_backoff
             AND c.labels <> '{}'
             AND c.labels @> p_labels
           ORDER BY c.priority DESC, c.seq)
          UNION ALL
          (SELECT d.id, d.priority, d.seq
           FROM items d
           WHERE d.project_id = p_project
             AND d.ready
             AND d.in_backoff
             AND d.not_before <= v_now
             -- (Written so that no labels' GIN index is a path of the
             -- read: items_labels holds every item.)
             AND (p_labels = '{}' OR d.labels @> p_labels)
             -- The filters of wg_claim_due, judged again below: with them
             -- the read is costed as wg_claim_due's, the front of
             -- items_backoff, not a scan of the table.
             AND (d.preferred_worker IS NULL
                  OR (d.preferred_worker = p_worker AND d.preferred_token IS NOT DISTINCT FROM p_token)
                  OR d.preferred_until <= v_now)
             AND (d.budget_roots = '{}' OR NOT wg_budgets_spent(d.project_id, d.budget_roots, v_now))
             AND d.requires <@ coalesce(p_capabilities, '{}')
             AND (d.touches = '{}' OR wg_scope_holder(d.project_id, NULL, d.touches, v_now) IS NULL)
           ORDER BY d.priority DESC, d.seq)) AS o (id, priority, seq)
    CROSS JOIN LATERAL (
        SELECT k.project_id, k.id, k.touches
        FROM items k
        WHERE k.project_id = p_project AND k.id = o.id
          AND k.ready
          AND k.labels @> p_labels
          AND (k.not_before IS NULL OR k.not_before <= v_now)
          AND (k.preferred_worker IS NULL
               OR (k.preferred_worker = p_worker AND k.preferred_token IS NOT DISTINCT FROM p_token)
               OR k.preferred_until <= v_now)
          AND (k.budget_roots = '{}' OR NOT wg_budgets_spent(k.project_id, k.budget_roots, v_now))
          AND k.requires <@ coalesce(p_capabilities, '{}')
          AND (k.touches = '{}' OR wg_scope_holder(k.project_id, NULL, k.touches, v_now) IS NULL)
        FOR UPDATE OF k SKIP LOCKED
    ) AS k
    ORDER BY o.priority DESC, o.seq
    LIMIT 1;
END;
$$;
-- +goose StatementEnd

-- wg_claimable_by_labels (00096): the carriers not in backoff, from
-- items_ready_labels, then those whose backoff has passed, from the front
-- of items_backoff.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claimable_by_labels(p_project uuid, p_labels text[], p_worker text, p_token uuid,
                                                  p_capabilities text[], p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = on
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, statement_timestamp());
BEGIN
    RETURN EXISTS (
        SELECT 1 FROM items c
        WHERE c.project_id = p_project
          AND c.ready
          AND NOT c.in_backoff
          AND c.labels <> '{}'
          AND c.labels @> p_labels
          AND (c.not_before IS NULL OR c.not_before <= v_now)
          AND (c.preferred_worker IS NULL
               OR (c.preferred_worker = p_worker AND c.preferred_token IS NOT DISTINCT FROM p_token)
               OR c.preferred_until <= v_now)
          AND c.requires <@ coalesce(p_capabilities, '{}')
          AND (c.budget_roots = '{}' OR NOT wg_budgets_spent(c.project_id, c.budget_roots, v_now))
          AND (c.touches = '{}' OR wg_scope_holder(c.project_id, NULL, c.touches, v_now) IS NULL))
        OR EXISTS (
        SELECT 1 FROM items d
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
          AND (d.touches = '{}' OR wg_scope_holder(d.project_id, NULL, d.touches, v_now) IS NULL));
END;
$$;
-- +goose StatementEnd

DROP INDEX CONCURRENTLY IF EXISTS items_ready_labels;
ALTER INDEX items_ready_labels_next RENAME TO items_ready_labels;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_labels_prev ON items USING gin (project_id, labels)
    WITH (fastupdate = off) WHERE ready AND labels <> '{}';

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
                                  WHERE m.project_id = p_project AND m.ready
                                    AND m.labels <> '{}' AND m.labels @> p_labels
                                  LIMIT 2000) AS carriers) < 2000;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claim_candidate_by_labels(p_project uuid, p_labels text[], p_worker text, p_token uuid,
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_claimable_by_labels(p_project uuid, p_labels text[], p_worker text, p_token uuid,
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

DROP INDEX CONCURRENTLY IF EXISTS items_ready_labels;
ALTER INDEX items_ready_labels_prev RENAME TO items_ready_labels;
