-- +goose Up
-- The one-statement claim's candidate search (ClaimItemDirect) as a
-- function, so that the statement around it can keep one plan per session
-- (docs/adr/0007-lean-hot-path.md, "Addendum: the claim's plan").
--
-- Planned at every execution, the claim statement cost about as much to
-- plan as to run (0.77 ms of planning against 1.10 ms of execution a call
-- in one measured run). Its generic plan could not be trusted: with the
-- project and the labels unknown, the planner estimates the candidates of
-- an average project, and in a database of many small projects it sorts
-- "the few" ready items of the claimed project instead of walking the
-- claim index, which for a large project reads and sorts all of them.
--
-- Here the search gets a plan that does not depend on those estimates:
-- with enable_sort off for the function's own queries, the only plan left
-- for ORDER BY priority DESC, seq ... LIMIT 1 is the walk of items_claim
-- (project_id, priority DESC, seq) WHERE ready, which stops at the first
-- item that passes the filters, whatever the project's size. That plan is
-- then kept by the session (force_generic_plan), so it is built once per
-- connection. The caller's statement sees a function returning one row,
-- whose cost no parameter changes, and PostgreSQL keeps its generic plan
-- too.
--
-- The filters are ClaimItemDirect's, unchanged (see db/queries/lease.sql):
-- the guards (no lease of the project past its expiry and not yet ended;
-- the token below p_token_quiet live leases when p_token_quiet > 0), the
-- labels, time gates, preferred worker, budgets, capabilities and the
-- scope overlap test. The row is locked FOR UPDATE SKIP LOCKED, as the
-- statement's own candidate was, for the caller's transaction. The two
-- settings apply to what the function's query calls too (wg_budgets_spent,
-- wg_scope_holder): their queries have no ORDER BY, so enable_sort does
-- not change their plans, and their plans were kept by the session
-- already.
-- +goose StatementBegin
CREATE FUNCTION wg_claim_candidate(p_project uuid, p_labels text[], p_worker text, p_token uuid,
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

-- +goose Down
DROP FUNCTION IF EXISTS wg_claim_candidate(uuid, text[], text, uuid, int, text[], timestamptz);
