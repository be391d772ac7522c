-- +goose NO TRANSACTION
-- +goose Up
-- Scope keys: the claim's overlap test reads only the live leases that may
-- overlap a candidate's touches, and the one-statement claim grants write
-- scopes itself (docs/architecture.md, "Capabilities and write scopes").
--
-- Two scopes with literal first path segments overlap only when their
-- resources and first segments are equal; a scope without a path, or whose
-- first segment holds a "*" (so "**" too), may overlap any scope of its
-- resource. So a live lease is indexed under, for each of its scopes, its
-- resource "res" and either "res:seg" (literal first segment seg) or
-- "res:*" (no path, or a wildcard first segment): wg_scope_keys. A
-- candidate scope looks for "res" when it has no path or a wildcard first
-- segment, else for "res:seg" and "res:*": wg_scope_probe. Every lease that
-- may overlap is found; the exact test (wg_scopes_overlap) runs on those
-- only. leases_live_scopes (00033, by resource alone) made the claim test
-- every live lease of the candidate's resources (it stays, for the
-- replicas of an older version during a rolling upgrade, whose claims test
-- overlaps through it; a later migration can drop it).
--
-- The advisory locks of a grant (wg_lock_scopes) follow the same split,
-- under the names lease.holdScopes used before (so the two agree during a
-- rolling upgrade): a scope with a literal first segment takes "res"
-- shared and "res/seg" exclusive, any other scope "res" exclusive. Two
-- overlapping scopes always take conflicting locks.

-- +goose StatementBegin
-- wg_scope_first: a scope's literal first path segment, or '*' when it has
-- no path or its first segment holds a "*". (Simple enough to be inlined.)
CREATE FUNCTION wg_scope_first(x text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN strpos(x, ':') = 0
                  OR strpos(split_part(substr(x, strpos(x, ':') + 1), '/', 1), '*') > 0 THEN '*'
                ELSE split_part(substr(x, strpos(x, ':') + 1), '/', 1) END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_scope_keys: the keys a live lease holding scopes s is indexed under.
CREATE FUNCTION wg_scope_keys(s text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT k.k ORDER BY k.k), '{}')
    FROM unnest(s) AS x,
         LATERAL (VALUES (split_part(x, ':', 1)), (split_part(x, ':', 1) || ':' || wg_scope_first(x))) AS k(k)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_scope_probe: the keys under which every live lease whose scopes may
-- overlap s is indexed.
CREATE FUNCTION wg_scope_probe(s text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT k.k ORDER BY k.k), '{}')
    FROM unnest(s) AS x,
         LATERAL (SELECT split_part(x, ':', 1) AS res, wg_scope_first(x) AS first) AS p,
         LATERAL (VALUES (CASE WHEN p.first = '*' THEN p.res ELSE p.res || ':' || p.first END),
                         (CASE WHEN p.first = '*' THEN NULL ELSE p.res || ':*' END)) AS k(k)
    WHERE k.k IS NOT NULL
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_scope_holder: a live lease (by instant p_at) other than p_except
-- holding a scope that overlaps p_scopes; NULL when there is none. The one
-- overlap test of the claim statements (ClaimItem, ClaimItemDirect, whose
-- candidates call it only when they touch something) and of
-- wg_lock_scopes: the scope keys find the leases that may overlap, the
-- exact rule (wg_scopes_overlap) decides. A function of its own (plpgsql,
-- so its plan is kept by the session) rather than a subquery in each
-- statement: the claim, planned at every execution, does not plan it.
CREATE FUNCTION wg_scope_holder(p_project uuid, p_except uuid, p_scopes text[], p_at timestamptz)
RETURNS uuid LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT h.id FROM leases h
            WHERE h.project_id = p_project
              AND h.ended_at IS NULL AND h.scope_keys <> '{}'
              AND h.scope_keys && wg_scope_probe(p_scopes)
              AND h.expires_at > p_at
              AND h.id IS DISTINCT FROM p_except
              AND wg_scopes_overlap(h.scopes, p_scopes)
            LIMIT 1);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_budgets_spent: whether any of the budgets p_roots (items of the
-- project) is spent at p_at (budget_spent, migration 00035). The claim
-- statements' one budget test (ClaimItem, ClaimItemDirect, ClaimItems),
-- called only for an item under a budget; a function for the reasons
-- wg_scope_holder is one.
CREATE FUNCTION wg_budgets_spent(p_project uuid, p_roots uuid[], p_at timestamptz)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM budgets b
                   WHERE b.project_id = p_project AND b.item_id = ANY (p_roots) AND budget_spent(b, p_at));
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_lock_scopes: the claim's guard for a grant of scopes s to lease
-- p_lease (lease.holdScopes; the one-statement claim calls it too). It
-- takes the grant's advisory locks (transaction-scoped, in the order of
-- their numbers, so two grants never wait on each other in a cycle), then
-- looks, with a snapshot taken after the locks are held (the function is
-- VOLATILE: under READ COMMITTED each of its queries takes its own), for a
-- live lease other than p_lease holding an overlapping scope. Any claim
-- that held a conflicting lock before has committed or rolled back by
-- then, so its lease is visible. If there is one, the grant lost a race:
-- the function raises WG002 and the claim's statement (and transaction)
-- rolls back; the claim tries again. Returns true otherwise.
CREATE FUNCTION wg_lock_scopes(p_project uuid, p_lease uuid, p_scopes text[], p_at timestamptz)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
    held uuid;
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
        IF r.x THEN
            PERFORM pg_advisory_xact_lock(r.h);
        ELSE
            PERFORM pg_advisory_xact_lock_shared(r.h);
        END IF;
    END LOOP;
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

ALTER TABLE leases ADD COLUMN IF NOT EXISTS scope_keys text[] NOT NULL DEFAULT '{}';
-- The live leases granted before this migration.
UPDATE leases SET scope_keys = wg_scope_keys(scopes)
WHERE ended_at IS NULL AND scopes <> '{}';
DROP INDEX CONCURRENTLY IF EXISTS leases_live_scope_keys;
CREATE INDEX CONCURRENTLY leases_live_scope_keys ON leases USING gin (scope_keys)
    WHERE ended_at IS NULL AND scope_keys <> '{}';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS leases_live_scope_keys;
ALTER TABLE leases DROP COLUMN IF EXISTS scope_keys;
DROP FUNCTION IF EXISTS wg_lock_scopes(uuid, uuid, text[], timestamptz);
DROP FUNCTION IF EXISTS wg_budgets_spent(uuid, uuid[], timestamptz);
DROP FUNCTION IF EXISTS wg_scope_holder(uuid, uuid, text[], timestamptz);
DROP FUNCTION IF EXISTS wg_scope_probe(text[]);
DROP FUNCTION IF EXISTS wg_scope_keys(text[]);
DROP FUNCTION IF EXISTS wg_scope_first(text);
