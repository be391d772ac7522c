-- +goose Up
-- How alive a live lease looks, written once: the workers page's queries
-- (LiveLeaseActivity, LiveLeasesPage, LiveLeasesOfWorkers) each spelled
-- the rule out. 0 stale (past its expiry at t, or silent for half its TTL
-- or more), 1 quiet (it heartbeated, but its progress has not changed for
-- quiet_after_ms), 2 healthy. A lease that has not heartbeated yet is not
-- quiet: within half its TTL its first heartbeat is not due. A plain SQL
-- expression of its arguments (IMMUTABLE), which the planner inlines.
-- +goose StatementBegin
CREATE FUNCTION wg_lease_liveness(p_expires_at timestamptz, p_heartbeat_at timestamptz,
                                  p_acquired_at timestamptz, p_progress_at timestamptz,
                                  p_quiet_after_ms bigint, p_at timestamptz)
RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_expires_at <= p_at
          OR p_at >= coalesce(p_heartbeat_at, p_acquired_at)
                     + (p_expires_at - coalesce(p_heartbeat_at, p_acquired_at)) / 2 THEN 0
        WHEN p_heartbeat_at IS NOT NULL
         AND coalesce(p_progress_at, p_acquired_at) + p_quiet_after_ms * interval '1 millisecond' <= p_at
            THEN 1
        ELSE 2
    END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS wg_lease_liveness(timestamptz, timestamptz, timestamptz, timestamptz, bigint, timestamptz);
