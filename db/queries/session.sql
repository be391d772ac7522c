-- name: CreateWebSession :one
-- created_at is the same instant as the start of the TTL (the server's
-- clock when it passes one), not the database's now(): with a clock
-- behind the database's by more than the TTL the row broke its own check.
INSERT INTO web_sessions (id_hash, token_id, created_at, expires_at)
VALUES (@id_hash, @token_id, coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @ttl_seconds::double precision))
RETURNING expires_at;

-- name: GetWebSession :one
-- A live session of a token that has not been revoked.
SELECT s.token_id, s.expires_at, t.name AS token_name, t.role, t.project_id
FROM web_sessions s
JOIN tokens t ON t.id = s.token_id
WHERE s.id_hash = @id_hash
  AND s.expires_at > coalesce(sqlc.narg('now')::timestamptz, now())
  AND t.revoked_at IS NULL;

-- name: DeleteWebSession :exec
DELETE FROM web_sessions WHERE id_hash = @id_hash;

-- name: DeleteExpiredWebSessions :execrows
DELETE FROM web_sessions
WHERE expires_at <= coalesce(sqlc.narg('now')::timestamptz, now());

-- name: PutWebFlash :exec
-- Keeps a one-time message for one session in one project (a later one of
-- the same key replaces it), and deletes the project's flashes that
-- expired unshown.
WITH gone AS (
    DELETE FROM web_flashes
    WHERE project_id = @project_id
      AND expires_at <= coalesce(sqlc.narg('now')::timestamptz, now())
      AND NOT (session_hash = @session_hash AND key = @key)
)
INSERT INTO web_flashes (project_id, session_hash, key, value, expires_at)
VALUES (@project_id, @session_hash, @key, @value,
        coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @ttl_seconds::double precision))
ON CONFLICT (project_id, session_hash, key)
DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at;

-- name: TakeWebFlash :one
-- Deletes a session's message of this key and returns it, with whether it
-- was still live: it is read once, whatever it says.
DELETE FROM web_flashes
WHERE project_id = @project_id AND session_hash = @session_hash AND key = @key
RETURNING value, expires_at > coalesce(sqlc.narg('now')::timestamptz, now()) AS live;
