-- +goose NO TRANSACTION
-- +goose Up
-- Lease history in a time window (GET /leases?since=, ?until=) reads the
-- window from the index in order (LeaseHistoryAcquired, lease.Service.History):
-- leases_by_acquired gains seq, the tie-break of that order, so a page is
-- read in order without a sort, from its cursor (acquired_at, seq).
--
-- Before, a page with since= walked the project's leases in grant order
-- (leases_history) and tested each one's acquisition time: at 1,000,000
-- ended leases a page of the last ten minutes read the whole history
-- (191 ms p50, 125 times a small project's, in a run of the benchmark
-- where other projects' leases were recent too, which is what made
-- PostgreSQL prefer the walk; alone it chose the index, and the target
-- held). CONCURRENTLY, as in 00019: no lease write waits for the build;
-- a build interrupted leaves an invalid index that the next attempt
-- drops. The index keeps its name.
DROP INDEX CONCURRENTLY IF EXISTS leases_by_acquired_seq;
CREATE INDEX CONCURRENTLY leases_by_acquired_seq ON leases (project_id, acquired_at, seq);
DROP INDEX CONCURRENTLY IF EXISTS leases_by_acquired;
ALTER INDEX leases_by_acquired_seq RENAME TO leases_by_acquired;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS leases_by_acquired_old;
CREATE INDEX CONCURRENTLY leases_by_acquired_old ON leases (project_id, acquired_at);
DROP INDEX CONCURRENTLY IF EXISTS leases_by_acquired;
ALTER INDEX leases_by_acquired_old RENAME TO leases_by_acquired;
