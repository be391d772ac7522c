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
CREATE FUNCTION wg_hold_scopes(project uuid, lease uuid, scopes text[], keys text[], exclusive boolean[],
                               at timestamptz)
RETURNS SETOF uuid LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT hashtextextended(project::text || ':' || k.k, 7250019) AS h, bool_or(x.x) AS x
        FROM unnest(keys) WITH ORDINALITY AS k(k, n)
        JOIN unnest(exclusive) WITH ORDINALITY AS x(x, n) ON x.n = k.n
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
        WHERE h.project_id = project
          AND h.ended_at IS NULL AND h.scope_resources <> '{}'
          AND h.scope_resources && wg_scope_resources(scopes)
          AND h.expires_at > coalesce(at, clock_timestamp())
          AND h.id <> lease
          AND wg_scopes_overlap(h.scopes, scopes)
        LIMIT 1;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION wg_hold_scopes(uuid, uuid, text[], text[], boolean[], timestamptz);
