-- +goose NO TRANSACTION
-- +goose Up
-- The probes of a claim that may be no_match no longer read every item in
-- a retry backoff (docs/adr/0007-lean-hot-path.md, "Addendum: claims past
-- retry backoffs").
--
-- The items in backoff are held apart from the claim indexes, in
-- items_backoff (00141), which is keyed by the instant the backoff ends.
-- Three probes asked them about their requires instead: "does one require
-- nothing" (ClaimNeedsTx's hopeless, ClaimHopeless), "does one require
-- only what the claim offers" (wg_requires_met) and "what do they require"
-- (MissingCapabilities). When none requires nothing (a fleet of gpu items
-- failing while the claim offers cpu) each read all of them, at each
-- claim that could match nothing.
--
-- items_backoff_requires holds the same items by requires. '{}' is the
-- least text[], so "does one require nothing" is its first entry, and
-- wg_backoff_requires reads the distinct requires by skipping through it:
-- one descent per value, however many items carry it, as wg_ready_requires
-- (00113) does for the claim index. Only an item marked in backoff has an
-- entry: it is written when a failed lease's ending statement marks the
-- item (and dies when the sweeper or a retry clears the mark), never by a
-- claim or a completion that does not fail.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_backoff_requires ON items (project_id, requires)
    WHERE ready AND in_backoff;

-- wg_backoff_requires is the distinct requires other than '{}' of the
-- project's ready items in backoff, in order, at most p_max of them.
-- +goose StatementBegin
CREATE FUNCTION wg_backoff_requires(p_project uuid, p_max int)
RETURNS SETOF text[]
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    WITH RECURSIVE seen (requires, n) AS (
        (SELECT b.requires, 1
         FROM items b
         WHERE b.project_id = p_project AND b.ready AND b.in_backoff AND b.requires > '{}'
         ORDER BY b.requires
         LIMIT 1)
        UNION ALL
        SELECT (SELECT b.requires
                FROM items b
                WHERE b.project_id = p_project AND b.ready AND b.in_backoff
                  AND b.requires > seen.requires
                ORDER BY b.requires
                LIMIT 1),
               seen.n + 1
        FROM seen
        WHERE seen.requires IS NOT NULL AND seen.n < p_max
    )
    SELECT seen.requires FROM seen WHERE seen.requires IS NOT NULL;
END;
$$;
-- +goose StatementEnd

-- wg_requires_met (00141): the requires of the items in backoff are asked
-- once each (wg_backoff_requires), not once per item.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_requires_met(p_project uuid, p_capabilities text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET jit = off
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
            IF (SELECT true FROM items i
                WHERE i.project_id = p_project AND i.ready AND NOT i.in_backoff AND i.requires <> '{}'
                  AND i.requires <@ p_capabilities
                ORDER BY i.priority DESC, i.seq
                LIMIT 1) IS NOT NULL THEN
                RETURN true;
            END IF;
            EXIT;
        END IF;
        IF r <@ p_capabilities THEN
            RETURN true;
        END IF;
    END LOOP;
    FOR r IN SELECT s FROM wg_backoff_requires(p_project, 2147483647) AS s LOOP
        IF r <@ p_capabilities THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_requires_met(p_project uuid, p_capabilities text[])
RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET jit = off
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
            IF (SELECT true FROM items i
                WHERE i.project_id = p_project AND i.ready AND NOT i.in_backoff AND i.requires <> '{}'
                  AND i.requires <@ p_capabilities
                ORDER BY i.priority DESC, i.seq
                LIMIT 1) IS NOT NULL THEN
                RETURN true;
            END IF;
            EXIT;
        END IF;
        IF r <@ p_capabilities THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN EXISTS (SELECT 1 FROM items b
                   WHERE b.project_id = p_project AND b.ready AND b.in_backoff
                     AND b.requires <> '{}' AND b.requires <@ p_capabilities);
END;
$$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS wg_backoff_requires(uuid, int);
DROP INDEX CONCURRENTLY IF EXISTS items_backoff_requires;
