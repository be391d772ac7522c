-- +goose NO TRANSACTION
-- +goose Up
-- Two indexes that no statement of this version reads, each written on
-- the hot path of a scoped claim:
--   * leases_live_scopes (00033), the GIN index of live leases by scope
--     resource: the overlap test reads leases through their scope keys
--     (leases_live_scope_keys, 00041) since 00041. It was kept for the
--     replicas of the version before 00041 during a rolling upgrade
--     (their wg_hold_scopes reads it); every version since has landed
--     with the keys, so a lease insert no longer pays a second GIN entry.
--   * items_ready_scoped (00040), ready items with touches: it answered
--     ClaimNeedsTx's question whether a scoped item waits for the
--     transactional path, which the one-statement claim no longer asks
--     (it grants scopes itself). Each update of a ready scoped item wrote
--     an entry to it.
-- CONCURRENTLY, as in 00008.
DROP INDEX CONCURRENTLY IF EXISTS leases_live_scopes;
DROP INDEX CONCURRENTLY IF EXISTS items_ready_scoped;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS leases_live_scopes ON leases USING gin (scope_resources)
    WHERE ended_at IS NULL AND scope_resources <> '{}';
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_scoped ON items (project_id) WHERE ready AND touches <> '{}';
