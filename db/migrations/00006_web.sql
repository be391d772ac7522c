-- +goose Up
-- Browser sessions of the web UI. A person signs in with a human or admin
-- token; the server then keeps a session whose random id lives only in the
-- browser's cookie and is stored here as a SHA-256 hash. A session lasts
-- until expires_at (decided by the database clock), until sign-out, or until
-- its token is revoked (the lookup joins tokens). Like tokens, sessions are
-- reference data rather than project data: an admin token belongs to no
-- project.
CREATE TABLE web_sessions (
    id_hash    bytea       PRIMARY KEY CHECK (length(id_hash) = 32),
    token_id   uuid        NOT NULL REFERENCES tokens (id),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    CHECK (expires_at > created_at)
);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);
CREATE INDEX web_sessions_token ON web_sessions (token_id);

-- +goose Down
DROP TABLE web_sessions;
