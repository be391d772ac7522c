-- name: CreateProject :one
INSERT INTO projects (name) VALUES (@name)
RETURNING *;

-- name: GetProject :one
SELECT * FROM projects WHERE id = @id;

-- name: GetProjectByName :one
SELECT * FROM projects WHERE name = @name;

-- name: ListProjects :many
SELECT * FROM projects ORDER BY name;

-- name: SetProjectOnExpiry :one
-- The project's default on_expiry, for items that name none.
UPDATE projects SET on_expiry = @on_expiry WHERE id = @id
RETURNING *;

-- name: SetProjectAttentionDue :one
-- The project's default deadline of workers' questions (NULL: none).
UPDATE projects SET attention_due_ms = sqlc.narg('due_ms')::bigint WHERE id = @id
RETURNING *;

-- name: SetProjectProgress :one
-- The project's quiet window (NULL: unchanged) and, when
-- @set_no_progress, its no_progress policy (NULL: none).
UPDATE projects
SET quiet_after_ms = coalesce(sqlc.narg('quiet_after_ms')::bigint, quiet_after_ms),
    no_progress_after_ms = CASE WHEN @set_no_progress::boolean
                                THEN sqlc.narg('no_progress_after_ms')::bigint
                                ELSE no_progress_after_ms END
WHERE id = @id
RETURNING *;
