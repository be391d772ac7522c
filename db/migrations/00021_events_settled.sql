-- +goose Up
-- Whether every transaction of this database that was in progress in
-- snapshot has ended: the wait of the event log's horizon
-- (events.Horizon). Transaction ids are cluster-wide, but a transaction
-- of another database of the cluster cannot hold an event number of this
-- one, so only those still holding their id's lock from a backend of this
-- database are waited for, or from no backend known (a prepared
-- transaction, a backend this role may not see): other databases' long
-- transactions no longer hold streams back. The first test is the quick
-- one, true when no transaction of the snapshot is left at all.
-- +goose StatementBegin
CREATE FUNCTION events_settled(snapshot pg_snapshot) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_snapshot_xmin(pg_current_snapshot()) >= pg_snapshot_xmax(snapshot)
        OR NOT EXISTS (
            SELECT 1
            FROM pg_locks l
            LEFT JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted
              AND l.transactionid IN (SELECT x::xid FROM pg_snapshot_xip(snapshot) AS x)
              AND (a.datid IS NULL
                   OR a.datid = (SELECT oid FROM pg_database WHERE datname = current_database())))
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION events_settled(pg_snapshot);
