-- +goose Up
-- +goose StatementBegin
-- wg_hold_scopes: the claim's re-check of a grant with scopes in one round
-- trip (lease.holdScopes): it takes the advisory locks of @keys (exclusive
-- where @exclusive says so, else shared; in the order of the locks'
-- numbers), then returns the live leases other than @lease that hold a
-- scope overlapping @scopes. The function is VOLATILE, so under READ
-- COMMITTED its second query takes a snapshot of its own after the locks
-- are held: it sees every lease granted by a claim that held a conflicting
-- lock before.
CREATE FUNCTION wg_hold_scopes(p_project uuid, p_lease uuid, p_scopes text[], p_keys text[], p_exclusive boolean[],
                               p_at timestamptz)
RETURNS SETOF uuid LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT hashtextextended(p_project::text || ':' || k.k, 7250019) AS h, bool_or(x.x) AS x
        FROM unnest(p_keys) WITH ORDINALITY AS k(k, n)
        JOIN unnest(p_exclusive) WITH ORDINALITY AS x(x, n) ON x.n = k.n
        GROUP BY 1 ORDER BY 1
    LOOP
        IF r.x THEN
            PERFORM pg_advisory_xact_lock(r.h);
        ELSE
            PERFORM pg_advisory_xact_lock_shared(r.h);
        END IF;
    END LOOP;
    RETURN QUERY
        SELECT h.id FROM leases h
        WHERE h.project_id = p_project
          AND h.ended_at IS NULL AND h.scope_resources <> '{}'
          AND h.scope_resources && wg_scope_resources(p_scopes)
          AND h.expires_at > coalesce(p_at, clock_timestamp())
          AND h.id <> p_lease
          AND wg_scopes_overlap(h.scopes, p_scopes)
        LIMIT 1;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION wg_hold_scopes(uuid, uuid, text[], text[], boolean[], timestamptz);
