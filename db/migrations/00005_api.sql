-- +goose Up
-- A token is found by its id (the "wg_<id>_<secret>" form) or, for a
-- bootstrap token the operator chose freely, by the hash of the whole bearer
-- string; either way the stored hash is compared in constant time.
CREATE UNIQUE INDEX tokens_secret_hash ON tokens (secret_hash);

-- Idempotency-Key records: the first answer to a POST carrying a key, kept
-- for 24 hours so that a retry with the same key and the same request gets
-- the same answer instead of doing the work twice. Keyed by the token that
-- sent the request (tokens are not project-scoped for admins, so neither is
-- this table; it is a reference table like tokens). status IS NULL while
-- the first request is still being processed.
CREATE TABLE idempotency_keys (
    token_id      uuid        NOT NULL REFERENCES tokens (id),
    key           text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash  bytea       NOT NULL CHECK (length(request_hash) = 32),
    status        integer,
    content_type  text,
    response      bytea,
    created_at    timestamptz NOT NULL DEFAULT now(),
    completed_at  timestamptz,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (token_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP INDEX tokens_secret_hash;
