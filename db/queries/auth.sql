-- name: InsertToken :one
INSERT INTO tokens (id, project_id, name, role, secret_hash)
VALUES (@id, sqlc.narg('project_id')::uuid, @name, @role, @secret_hash)
RETURNING *;

-- name: InsertTokenIfAbsent :execrows
-- Used for the bootstrap token: replicas starting at once insert it once.
INSERT INTO tokens (id, project_id, name, role, secret_hash)
VALUES (@id, sqlc.narg('project_id')::uuid, @name, @role, @secret_hash)
ON CONFLICT (secret_hash) DO NOTHING;

-- name: GetToken :one
SELECT * FROM tokens WHERE id = @id;

-- name: GetTokenByHash :one
SELECT * FROM tokens WHERE secret_hash = @secret_hash;

-- name: ListProjectTokens :many
SELECT * FROM tokens WHERE project_id = @project_id ORDER BY created_at, id;

-- name: RevokeToken :one
UPDATE tokens SET revoked_at = coalesce(revoked_at, coalesce(sqlc.narg('now')::timestamptz, now()))
WHERE id = @id AND project_id = @project_id
RETURNING *;

-- name: CountTokens :one
SELECT count(*) FROM tokens;

-- name: LockFirstStart :exec
-- Serialises the first-start check between replicas starting at once.
SELECT pg_advisory_xact_lock(7250002);
