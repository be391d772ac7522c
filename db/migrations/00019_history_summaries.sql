-- +goose NO TRANSACTION
-- +goose Up
-- History pages that stay flat as the history grows (docs/operations.md,
-- "What grows with a project").
--
-- GET /v1/projects/{p}/leases?since=: the leases acquired since an instant.
-- Without this index the page walks the project's whole history in seq
-- order to find the recent ones. CONCURRENTLY, so that upgrading a server
-- with a long history does not block lease writes while it builds; an
-- interrupted build leaves an invalid index, dropped by the next attempt.
DROP INDEX CONCURRENTLY IF EXISTS leases_by_acquired;
CREATE INDEX CONCURRENTLY leases_by_acquired ON leases (project_id, acquired_at);

-- GET /v1/projects/{p}/workers: per worker and outcome, how many leases
-- ended so, and when the worker was last heard from in them. A counter
-- maintained by triggers on leases when a lease ends (or is inserted
-- ended), not history: with lease_refusals, the lease-related tables whose
-- rows change. Live leases are not counted here: the page reads them from
-- the partial index of live leases.
--
-- One transaction with the table locked against lease writes, so that
-- the backfill and the triggers together count every ended lease once.
BEGIN;
LOCK TABLE leases IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE worker_outcome_counts (
    project_id uuid        NOT NULL,
    worker     text        NOT NULL,
    outcome    text        NOT NULL,
    leases     bigint      NOT NULL CHECK (leases > 0),
    -- The latest claim, heartbeat or end among these leases.
    last_seen  timestamptz NOT NULL,
    PRIMARY KEY (project_id, worker, outcome),
    FOREIGN KEY (project_id) REFERENCES projects (id)
);
-- +goose StatementBegin
CREATE FUNCTION count_ended_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO worker_outcome_counts AS c (project_id, worker, outcome, leases, last_seen)
    VALUES (NEW.project_id, NEW.worker, NEW.outcome, 1,
            greatest(NEW.acquired_at, NEW.heartbeat_at, NEW.ended_at))
    ON CONFLICT (project_id, worker, outcome) DO UPDATE
    SET leases = c.leases + 1,
        last_seen = greatest(c.last_seen, EXCLUDED.last_seen);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
-- Rows inserted already ended (history imported, or loaded in bulk):
-- counted per statement, one upsert per worker and outcome in key order.
-- A row trigger would update the same counter row once per lease, and a
-- transaction that does so many times walks a longer chain of row
-- versions each time (a bulk load of n leases then costs n^2). The claim's
-- INSERT of a live lease pays for one call that finds nothing to count.
-- +goose StatementBegin
CREATE FUNCTION count_inserted_ended_leases() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO worker_outcome_counts AS c (project_id, worker, outcome, leases, last_seen)
    SELECT project_id, worker, outcome, count(*), max(greatest(acquired_at, heartbeat_at, ended_at))
    FROM inserted
    WHERE ended_at IS NOT NULL
    GROUP BY project_id, worker, outcome
    ORDER BY project_id, worker, outcome
    ON CONFLICT (project_id, worker, outcome) DO UPDATE
    SET leases = c.leases + EXCLUDED.leases,
        last_seen = greatest(c.last_seen, EXCLUDED.last_seen);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
-- Leases that end by an UPDATE (every end today): a row trigger with a
-- WHEN clause, so that a heartbeat (no ended_at in its SET list) does not
-- fire it at all, and ending one lease updates one counter row. An ended
-- lease never changes again (leases_guard), so each lease is counted once.
-- Two transactions ending leases of the same workers in opposite orders
-- can deadlock on the counter rows; PostgreSQL aborts one, and db.InTx
-- runs it again. A statement ending many leases of one worker at once (a
-- reap of up to 1,000) updates that worker's row once per lease, the n^2
-- above with a bounded n.
CREATE TRIGGER leases_count_ended AFTER UPDATE OF ended_at ON leases
    FOR EACH ROW WHEN (OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL)
    EXECUTE FUNCTION count_ended_lease();
CREATE TRIGGER leases_count_inserted_ended AFTER INSERT ON leases
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION count_inserted_ended_leases();
INSERT INTO worker_outcome_counts (project_id, worker, outcome, leases, last_seen)
SELECT project_id, worker, outcome, count(*), max(greatest(acquired_at, heartbeat_at, ended_at))
FROM leases
WHERE ended_at IS NOT NULL
GROUP BY project_id, worker, outcome;
COMMIT;

-- +goose Down
BEGIN;
DROP TRIGGER leases_count_inserted_ended ON leases;
DROP TRIGGER leases_count_ended ON leases;
DROP FUNCTION count_inserted_ended_leases();
DROP FUNCTION count_ended_lease();
DROP TABLE worker_outcome_counts;
COMMIT;
DROP INDEX CONCURRENTLY IF EXISTS leases_by_acquired;
