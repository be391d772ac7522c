-- name: AppendEvent :one
-- Appends one event in the caller's transaction; the trigger numbers it.
-- event_at NULL: the database's clock.
INSERT INTO events (project_id, type, at, actor, item_id, lease_id, attention_id, payload)
VALUES (sqlc.arg('project_id'), sqlc.arg('event_type'), sqlc.narg('event_at')::timestamptz, sqlc.arg('actor'),
        sqlc.narg('item_id')::uuid, sqlc.narg('lease_id')::uuid, sqlc.narg('attention_id')::uuid,
        sqlc.arg('payload'))
RETURNING seq, at;

-- name: EventsLastNumber :one
-- The newest event number any session holds (0: none yet). The first of
-- the horizon's two statements (events.Horizon).
SELECT coalesce(pg_sequence_last_value('events_seq'::regclass), 0)::bigint AS last;

-- name: EventsRunning :one
-- The second: the transactions of this database holding an id now
-- (events_running, migration 00021).
SELECT events_running()::text[] AS running;

-- name: EventsSettled :one
-- Whether every one of them has ended since.
SELECT events_settled(sqlc.arg('running')::text[])::boolean AS settled;

-- name: ListEvents :many
-- A project's events after a number, up to a horizon, oldest first;
-- types empty: all types; item_id NULL: all items.
SELECT project_id, seq, type, at, actor, item_id, lease_id, attention_id, payload
FROM events
WHERE project_id = @project_id
  AND seq > @after::bigint AND seq <= @up_to::bigint
  AND (cardinality(@types::text[]) = 0 OR type = ANY (@types::text[]))
  AND (sqlc.narg('item_id')::uuid IS NULL OR item_id = sqlc.narg('item_id')::uuid)
ORDER BY seq
LIMIT @max_rows;

-- name: ListEventsAllProjects :many
-- Every project's events after a number, up to a horizon (an admin's
-- stream): a cross-project read, listed in db/citus_test.go.
SELECT project_id, seq, type, at, actor, item_id, lease_id, attention_id, payload
FROM events
WHERE seq > @after::bigint AND seq <= @up_to::bigint
  AND (cardinality(@types::text[]) = 0 OR type = ANY (@types::text[]))
ORDER BY seq
LIMIT @max_rows;
