-- +goose Up
-- One-time messages of the web UI that must not travel in a URL or a
-- cookie: a webhook's signing secret, made by a form post, is shown on the
-- page the post redirects to (Post/Redirect/Get). A row is bound to the
-- sign-in session that made it (the SHA-256 hash of its id, as
-- web_sessions keeps it) and to one project; the page that shows it
-- deletes it in the statement that reads it, so a reload shows nothing.
-- Rows live minutes (expires_at, by the database clock): one never shown
-- is deleted by the next flash of its project. No foreign key to
-- web_sessions: a session's flashes are unreachable once it ends, and
-- expire.
CREATE TABLE web_flashes (
    project_id   uuid        NOT NULL REFERENCES projects (id),
    session_hash bytea       NOT NULL CHECK (length(session_hash) = 32),
    key          text        NOT NULL CHECK (length(key) BETWEEN 1 AND 200),
    value        text        NOT NULL CHECK (length(value) <= 4096),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (project_id, session_hash, key)
);
CREATE INDEX web_flashes_expiry ON web_flashes (project_id, expires_at);

-- +goose Down
DROP TABLE web_flashes;
