-- name: BeginIdempotentRequest :execrows
-- Claims (token, key) for a new request. An expired record is taken over.
INSERT INTO idempotency_keys (token_id, key, request_hash, expires_at)
VALUES (@token_id, @key, @request_hash, coalesce(sqlc.narg('now')::timestamptz, now()) + interval '24 hours')
ON CONFLICT (token_id, key) DO UPDATE
    SET request_hash = EXCLUDED.request_hash,
        status = NULL, content_type = NULL, response = NULL,
        created_at = coalesce(sqlc.narg('now')::timestamptz, now()),
        completed_at = NULL,
        expires_at = EXCLUDED.expires_at
    WHERE idempotency_keys.expires_at <= coalesce(sqlc.narg('now')::timestamptz, now());

-- name: GetIdempotentRequest :one
SELECT * FROM idempotency_keys WHERE token_id = @token_id AND key = @key;

-- name: FinishIdempotentRequest :exec
UPDATE idempotency_keys
SET status = @status, content_type = @content_type, response = @response,
    completed_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE token_id = @token_id AND key = @key AND request_hash = @request_hash AND status IS NULL;

-- name: AbandonIdempotentRequest :exec
-- Forgets a request that produced no answer worth replaying (a server error,
-- a rate limit, a cancelled request), so that a retry runs it again.
DELETE FROM idempotency_keys
WHERE token_id = @token_id AND key = @key AND request_hash = @request_hash AND status IS NULL;

-- name: DeleteExpiredIdempotencyKeys :execrows
DELETE FROM idempotency_keys
WHERE expires_at <= coalesce(sqlc.narg('now')::timestamptz, now());
