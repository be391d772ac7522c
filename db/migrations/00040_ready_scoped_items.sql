-- +goose NO TRANSACTION
-- +goose Up
-- The one-statement claim does not grant write scopes (only the
-- transactional path takes the scope locks, lease/scopes.go); when it
-- claimed nothing, ClaimNeedsTx asks whether a ready item with touches
-- waits for that path. This index holds only those items, so the question
-- costs a probe, however many ready items have no touches. CONCURRENTLY,
-- as in 00008.
DROP INDEX CONCURRENTLY IF EXISTS items_ready_scoped;
CREATE INDEX CONCURRENTLY items_ready_scoped ON items (project_id) WHERE ready AND touches <> '{}';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS items_ready_scoped;
