-- +goose NO TRANSACTION
-- +goose Up
-- The claim's overlap test finds the live leases that hold a scope of one
-- of the candidate's resources through this index (live leases without
-- scopes are not in it). CONCURRENTLY, as in 00008.
DROP INDEX CONCURRENTLY IF EXISTS leases_live_scopes;
CREATE INDEX CONCURRENTLY leases_live_scopes ON leases USING gin (scope_resources)
    WHERE ended_at IS NULL AND scope_resources <> '{}';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS leases_live_scopes;
