-- +goose Up
-- wg_lock_scopes takes a grant's scope locks through wg_lock_scope_set
-- (00167), which derives the lock keys of a set of scopes, orders them and
-- takes them waiting or only if free. Each wrote the derivation: a grant's
-- locks conflict with an end's and a claim's only while both derive the
-- same keys, so one place keeps them from drifting apart. A grant has at
-- most graph.MaxScopes (32) scopes, at most 64 locks, so the wide-set
-- branch of wg_lock_scope_set (above 64, each resource's lock exclusive)
-- never applies to it; the locks, their order and the answers are the
-- same as before.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_lock_scopes(p_project uuid, p_lease uuid, p_scopes text[], p_at timestamptz)
RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    held uuid;
    -- A transaction that already holds scope locks (a grant's, or an
    -- end's in wg_release_scoped_items) only takes locks that are free:
    -- waiting could close a cycle with a transaction waiting for its own.
    holding boolean := coalesce(current_setting('workgraph.scope_locks_held', true), '') = 'on'
                       OR coalesce(current_setting('workgraph.scope_end_locks_held', true), '') = 'on';
BEGIN
    IF NOT wg_lock_scope_set(p_project, p_scopes, holding) THEN
        RAISE EXCEPTION 'a concurrent claim holds a lock of the write scopes %', p_scopes USING ERRCODE = 'WG002';
    END IF;
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

-- +goose Down
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
