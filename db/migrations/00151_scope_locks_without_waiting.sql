-- +goose Up
-- wg_lock_scopes (migration 00041) waits for each advisory lock of a
-- grant's scopes, in the order of their numbers, so that two grants never
-- wait on each other in a cycle. That holds for one grant per
-- transaction. A batch claim sent with an Idempotency-Key runs as one
-- transaction (the key's record commits with its leases) and grants
-- several items with touches, one statement each (lease.fillScoped): the
-- locks of its first grant are held while it takes those of the next, and
-- two such transactions could each hold what the other waits for. So a
-- transaction that already holds the locks of a grant takes those of a
-- further grant only if they are free: a lock held by another claim is a
-- lost race (WG002), as an overlap found under the locks is, and the
-- batch answers what it holds. A transaction waits for scope locks only
-- while it holds none of them, so scope locks never close a cycle.
-- workgraph.scope_locks_held is set (transaction-local, so it ends with
-- the transaction and with a savepoint rolled back) once a grant holds its
-- locks.

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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_lock_scopes(p_project uuid, p_lease uuid, p_scopes text[], p_at timestamptz)
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
    held := wg_scope_holder(p_project, p_lease, p_scopes, coalesce(p_at, clock_timestamp()));
    IF held IS NOT NULL THEN
        RAISE EXCEPTION 'lease % holds a write scope overlapping %', held, p_scopes USING ERRCODE = 'WG002';
    END IF;
    RETURN true;
END;
$$;
-- +goose StatementEnd
