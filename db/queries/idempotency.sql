-- name: GetIdempotentRequest :one
-- owner_alive: the record is still locked by its owner (database clock).
SELECT request_hash, status, content_type, response, etag, effect_at, effect_ref,
       locked_until > coalesce(sqlc.narg('now')::timestamptz, now()) AS owner_alive
FROM idempotency_keys WHERE token_id = @token_id AND key = @key;

-- name: RenewIdempotentRequest :execrows
-- Extends the owner's lock on a record still in progress; 0 rows: the
-- record is no longer the owner's.
UPDATE idempotency_keys
SET locked_until = coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @lock_seconds::float8)
WHERE token_id = @token_id AND key = @key AND owner = @owner AND status IS NULL;

-- name: MarkIdempotentEffect :one
-- Runs inside the owner's write transaction, just before it commits: when
-- the transaction wrote anything, the record is marked as having taken
-- effect, which only its owner can do. wrote and marked tell the caller
-- whether it wrote and whether it still owned the record.
WITH w AS (SELECT pg_current_xact_id_if_assigned() IS NOT NULL AS wrote),
m AS (
    UPDATE idempotency_keys k
    SET effect_at = coalesce(k.effect_at, now())
    FROM w
    WHERE w.wrote AND k.token_id = @token_id AND k.key = @key AND k.owner = @owner AND k.status IS NULL
    RETURNING 1
)
SELECT (SELECT wrote FROM w)::bool AS wrote, (SELECT count(*) FROM m) > 0 AS marked;

-- name: MarkIdempotentClaim :one
-- MarkIdempotentEffect for a claim: its transaction took effect only when
-- it granted a lease to the token (a claim that found nothing may still
-- have ended expired leases, which any later claim would do as well). The
-- lease, inserted by this very transaction (xmin), is kept as effect_ref.
WITH g AS (
    SELECT l.id FROM leases l
    WHERE l.token_id = @token_id AND l.ended_at IS NULL AND l.xmin = pg_current_xact_id_if_assigned()::xid
    LIMIT 1
),
m AS (
    UPDATE idempotency_keys k
    SET effect_at = coalesce(k.effect_at, now()), effect_ref = (SELECT id::text FROM g)
    WHERE EXISTS (SELECT 1 FROM g)
      AND k.token_id = @token_id AND k.key = @key AND k.owner = @owner AND k.status IS NULL
    RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM g) AS wrote, (SELECT count(*) FROM m) > 0 AS marked;

-- name: FinishIdempotentRequest :exec
UPDATE idempotency_keys
SET status = @status, content_type = @content_type, response = @response,
    etag = sqlc.narg('etag'),
    completed_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE token_id = @token_id AND key = @key AND owner = @owner AND status IS NULL;

-- name: AbandonIdempotentRequest :execrows
-- Forgets a request that produced no answer worth replaying (a server error,
-- a rate limit, a cancelled request) and took no effect, so that a retry
-- runs it again.
DELETE FROM idempotency_keys
WHERE token_id = @token_id AND key = @key AND owner = @owner AND status IS NULL AND effect_at IS NULL;

-- name: ReleaseIdempotentRequest :exec
-- Unlocks a record whose request took effect but has no answer to keep:
-- a retry is told at once that the outcome is unknown.
UPDATE idempotency_keys
SET locked_until = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE token_id = @token_id AND key = @key AND owner = @owner AND status IS NULL;

-- name: DeleteExpiredIdempotencyKeys :execrows
DELETE FROM idempotency_keys
WHERE expires_at <= coalesce(sqlc.narg('now')::timestamptz, now());

-- name: BeginIdempotentRequestCarried :exec
-- Claims (token, key) for a new request run by owner, locked for
-- lock_seconds by the database's clock. An expired record is taken over,
-- and so is a record of the same request still in progress whose owner
-- stopped renewing it (it died) before its effect committed. It raises
-- WG006 (DETAIL idempotency_taken) when another request holds the record:
-- as a request's precondition (db.Precheck), sent at the head of the
-- request's first batch, nothing of the batch commits and the request is
-- answered from the record instead; sent alone (Store.Begin), the refusal
-- says the same.
WITH b AS (
    INSERT INTO idempotency_keys (token_id, key, request_hash, owner, locked_until, expires_at)
    VALUES (@token_id, @key, @request_hash, @owner,
            coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @lock_seconds::float8),
            coalesce(sqlc.narg('now')::timestamptz, now()) + interval '24 hours')
    ON CONFLICT (token_id, key) DO UPDATE
        SET request_hash = EXCLUDED.request_hash,
            status = NULL, content_type = NULL, response = NULL,
            created_at = coalesce(sqlc.narg('now')::timestamptz, now()),
            completed_at = NULL,
            expires_at = EXCLUDED.expires_at,
            owner = EXCLUDED.owner,
            locked_until = EXCLUDED.locked_until,
            effect_at = NULL, effect_ref = NULL
        WHERE idempotency_keys.expires_at <= coalesce(sqlc.narg('now')::timestamptz, now())
           OR (idempotency_keys.status IS NULL
               AND idempotency_keys.effect_at IS NULL
               AND idempotency_keys.request_hash = EXCLUDED.request_hash
               AND idempotency_keys.locked_until <= coalesce(sqlc.narg('now')::timestamptz, now()))
    RETURNING 1
)
SELECT request_precondition(EXISTS (SELECT 1 FROM b), 'idempotency_taken',
    'another request holds the record of this Idempotency-Key');

-- name: MarkIdempotentClaimCarried :exec
-- MarkIdempotentClaim sent in the claim's own batch, after the claiming
-- statement (its answer is not read): it raises WG006 (DETAIL conflict),
-- aborting the batch and so the grant, when the claim granted a lease but
-- the record is no longer the owner's.
WITH g AS (
    SELECT l.id FROM leases l
    WHERE l.token_id = @token_id AND l.ended_at IS NULL AND l.xmin = pg_current_xact_id_if_assigned()::xid
    LIMIT 1
),
m AS (
    UPDATE idempotency_keys k
    SET effect_at = coalesce(k.effect_at, now()), effect_ref = (SELECT id::text FROM g)
    WHERE EXISTS (SELECT 1 FROM g)
      AND k.token_id = @token_id AND k.key = @key AND k.owner = @owner AND k.status IS NULL
    RETURNING 1
)
SELECT request_precondition(NOT EXISTS (SELECT 1 FROM g) OR EXISTS (SELECT 1 FROM m), 'conflict',
    'the request with this Idempotency-Key was taken over by a retry; nothing was changed');
