-- +goose Up
-- The wait of the event log's horizon (events.Horizon), in two functions.
--
-- events_running lists the transactions of this database that hold a
-- transaction id now: each holds the lock of its id from the moment the id
-- is assigned until after its commit is visible to everyone. A transaction
-- that took an event number got its id first (events_number), so once the
-- horizon has read the newest number taken, every transaction holding a
-- number up to it is in the list that is read next, or has ended and is
-- visible. events_settled says whether all of them have ended since.
--
-- Locks, not a snapshot: a snapshot's list of transactions in progress
-- omits those whose id is above its xmax (the newest completed id + 1),
-- and a transaction can take its id and an event number after another
-- transaction's id but before that one completes, so the snapshot's list
-- can miss a transaction holding a number (a stream then skipped an event
-- committed a moment later). Transaction ids are cluster-wide; a
-- transaction of another database cannot hold an event number of this
-- one, so only those of a backend of this database are listed, or of no
-- backend known (a prepared transaction, a backend this role may not see).
-- +goose StatementBegin
CREATE FUNCTION events_running() RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(l.transactionid::text), '{}')
    FROM pg_locks l
    LEFT JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted
      AND (a.datid IS NULL OR a.datid = (SELECT oid FROM pg_database WHERE datname = current_database()))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION events_settled(running text[]) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT cardinality(running) = 0 OR NOT EXISTS (
        SELECT 1
        FROM pg_locks l
        WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted
          AND l.transactionid::text = ANY (running))
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION events_settled(text[]);
DROP FUNCTION events_running();
