-- name: CensusItems :many
-- Items by derived state per project, for the gauges of /metrics (package
-- metrics, at most once per census interval per replica, never per scrape;
-- read-only like the two below). A scan of items: the one census
-- read whose cost grows with the data (docs/operations.md).
SELECT p.name AS project,
       item_state(i.status, i.active_lease_id, i.open_attention, i.unmet_dependencies,
                  i.open_children, i.not_before, now())::text AS state,
       count(*)::bigint AS items
FROM items i JOIN projects p ON p.id = i.project_id
GROUP BY 1, 2;

-- name: CensusLiveLeases :many
-- Live leases per project (the partial index of live leases).
SELECT p.name AS project, count(*)::bigint AS leases
FROM leases l JOIN projects p ON p.id = l.project_id
WHERE l.ended_at IS NULL
GROUP BY 1;

-- name: CensusOpenAttention :many
-- Open attention requests per project and the age of the oldest, by the
-- database's clock (the partial index of open requests).
SELECT p.name AS project, count(*)::bigint AS open,
       extract(epoch FROM now() - min(a.created_at))::float8 AS oldest_seconds
FROM attention_requests a JOIN projects p ON p.id = a.project_id
WHERE a.state = 'open'
GROUP BY 1;

-- name: CensusDueDeliveries :many
-- Webhook deliveries due per project (pending, their next attempt passed,
-- in flight or not) of enabled webhooks, by the database's clock: the
-- delivery backlog (the partial index of pending deliveries). A disabled
-- webhook's deliveries wait for a person, not for the deliverer.
SELECT p.name AS project, count(*)::bigint AS due
FROM webhook_deliveries d
JOIN webhooks w ON w.project_id = d.project_id AND w.id = d.webhook_id AND w.enabled
JOIN projects p ON p.id = d.project_id
WHERE d.state = 'pending' AND d.next_attempt_at <= now()
GROUP BY 1;
