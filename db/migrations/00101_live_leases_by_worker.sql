-- +goose NO TRANSACTION
-- +goose Up
-- The live leases of a worker, for a page of GET /v1/projects/{p}/workers
-- and the web UI's workers page (WorkerOutcomesOf, LiveLeasesOfWorkers):
-- leases_by_worker holds a worker's whole history, which a page would
-- walk to find its few live leases. Partial: a lease leaves it when it
-- ends. A lease's heartbeat already writes a new entry in every index
-- (leases_active_expiry holds expires_at, so it is never a HOT update):
-- this one adds one more small entry per heartbeat and per claim.
-- CONCURRENTLY, as in 00008.
CREATE INDEX CONCURRENTLY IF NOT EXISTS leases_live_by_worker ON leases (project_id, worker) WHERE ended_at IS NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS leases_live_by_worker;
