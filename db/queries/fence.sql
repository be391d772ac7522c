-- name: InsertFenceKey :exec
-- Creates the deployment's key unless another replica already did.
INSERT INTO fence_keys (id, seed) VALUES (1, @seed)
ON CONFLICT (id) DO NOTHING;

-- name: GetFenceKey :one
SELECT seed FROM fence_keys WHERE id = 1;
