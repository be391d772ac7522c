-- name: InsertFenceKey :exec
-- Creates the deployment's first key unless another replica already did.
INSERT INTO fence_keys (id, seed) VALUES (1, @seed)
ON CONFLICT (id) DO NOTHING;

-- name: GetFenceKey :one
-- The signing key: the newest (largest id).
SELECT seed FROM fence_keys ORDER BY id DESC LIMIT 1;

-- name: ListFenceKeys :many
-- The published keys, newest first: the signing key and those a rotation
-- replaced whose grace has not passed (by the database clock).
SELECT seed FROM fence_keys
WHERE retire_at IS NULL OR retire_at > coalesce(sqlc.narg('now')::timestamptz, now())
ORDER BY id DESC;

-- name: RotateFenceKey :one
-- Adds a new signing key (the next id) and retires the keys it replaces
-- after grace_seconds: a key already retiring earlier keeps its time.
WITH retired AS (
    UPDATE fence_keys
    SET retire_at = coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @grace_seconds::float8)
    WHERE retire_at IS NULL
       OR retire_at > coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @grace_seconds::float8)
    RETURNING id
)
INSERT INTO fence_keys (id, seed)
SELECT coalesce(max(id), 0) + 1, @seed FROM fence_keys
RETURNING id;
