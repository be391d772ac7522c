-- name: AppendEvent :one
-- Appends one event in the caller's transaction, numbered by the column's
-- identity (migration 00043). event_at NULL: the database's clock. The
-- project is read from its row (no row, no event: the table has no
-- foreign key to projects, see 00043).
INSERT INTO events (project_id, type, at, actor, item_id, lease_id, attention_id, payload)
SELECT p.id, sqlc.arg('event_type'),
       coalesce(sqlc.narg('event_at')::timestamptz, clock_timestamp()), sqlc.arg('actor'),
       sqlc.narg('item_id')::uuid, sqlc.narg('lease_id')::uuid, sqlc.narg('attention_id')::uuid,
       sqlc.arg('payload')
FROM projects p
WHERE p.id = sqlc.arg('project_id')
RETURNING seq, at;

-- name: EventsLastNumber :one
-- The newest event number any session holds (0: none yet). The first of
-- the horizon's two statements (events.Horizon).
SELECT coalesce(pg_sequence_last_value('events_seq'::regclass), 0)::bigint AS last;

-- name: EventsWriters :one
-- The second: the transactions of this database that hold the lock an
-- insert into events takes (before the trigger takes its number), by
-- virtual transaction id; a transaction that took a number up to the one
-- just read is among them, unless it has ended.
SELECT coalesce(array_agg(l.virtualtransaction), '{}')::text[] AS writers
FROM pg_catalog.pg_locks l
WHERE l.locktype = 'relation' AND l.granted
  AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database())
  AND l.relation = 'events'::regclass
  AND l.mode = 'RowExclusiveLock'
  AND l.pid <> pg_backend_pid();

-- name: EventsWritersRunning :one
-- Whether any of the writers is still running: a transaction holds the
-- lock on its own virtual transaction id until it ends.
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks l
    WHERE l.locktype = 'virtualxid' AND l.granted
      AND l.virtualxid = ANY (sqlc.arg('writers')::text[])
) AS running;

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

-- name: SetEventActor :exec
-- Names the actor of the transaction's changes whose rows do not record
-- one (item state changes, tokens): read by the event triggers (00016).
SELECT set_config('workgraph.actor', @actor::text, true);

-- name: DeleteOldEvents :one
-- Retention: deletes a project's oldest events, among its first
-- @max_rows by number, that are older than @keep_ms before now (the
-- database clock, or a test's stub), and raises the project's retention
-- horizon (events_pruned) to the newest number deleted, in the same
-- statement. Numbers follow time, so a batch stops at the first event
-- inside the retention; it reads at most @max_rows rows. The caller's
-- transaction has run EnableEventDeletion; the table refuses anything
-- younger than a day. Returns how many events it deleted.
WITH first AS (
    SELECT e.seq, e.at FROM events e
    WHERE e.project_id = @project_id::uuid
    ORDER BY e.seq
    LIMIT @max_rows
), deleted AS (
    DELETE FROM events d
    USING first
    WHERE d.project_id = @project_id::uuid AND d.seq = first.seq
      AND first.at < coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
                     - sqlc.arg('keep_ms')::bigint * interval '1 millisecond'
    RETURNING d.seq
), horizon AS (
    INSERT INTO events_pruned (project_id, pruned_through)
    SELECT @project_id::uuid, max(deleted.seq) FROM deleted HAVING count(*) > 0
    ON CONFLICT (project_id) DO UPDATE
        SET pruned_through = greatest(events_pruned.pruned_through, excluded.pruned_through)
)
SELECT count(*)::bigint AS deleted FROM deleted;

-- name: EventsPrunedThrough :one
-- A project's retention horizon: the newest event number retention has
-- deleted in it (0: none).
SELECT coalesce(max(pruned_through), 0)::bigint AS pruned_through
FROM events_pruned WHERE project_id = @project_id;

-- name: EventsPrunedThroughAll :one
-- The newest event number retention has deleted in any project (0:
-- none): the retention horizon of an admin's read over every project (a
-- cross-project read, listed in db/citus_test.go).
SELECT coalesce(max(pruned_through), 0)::bigint AS pruned_through FROM events_pruned;

-- name: EnableEventDeletion :exec
-- Lets the retention service's transaction delete old events (00015).
SELECT set_config('workgraph.events_retention', 'on', true);

-- name: ProjectsWithOldEvents :many
-- The projects whose oldest event is older than @keep_ms before now
-- (retention): one index probe per project, a cross-project read of the
-- projects reference table.
SELECT p.id FROM projects p
CROSS JOIN LATERAL (SELECT e.at FROM events e WHERE e.project_id = p.id ORDER BY e.seq LIMIT 1) AS oldest
WHERE oldest.at < coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
                  - sqlc.arg('keep_ms')::bigint * interval '1 millisecond'
ORDER BY p.id;
