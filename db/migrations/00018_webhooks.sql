-- +goose Up
-- Webhooks: a project's subscriptions to its event log. Each webhook
-- follows the log with a cursor of its own: the fan-out step (package
-- webhook) turns the events numbered after the cursor, up to the log's
-- horizon, into delivery rows and moves the cursor in the same statement,
-- so an event becomes exactly one delivery of each webhook that wants it.
CREATE TABLE webhooks (
    project_id     uuid        NOT NULL REFERENCES projects (id),
    id             uuid        NOT NULL DEFAULT gen_random_uuid(),
    url            text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    -- The event types wanted; empty: every type.
    event_types    text[]      NOT NULL DEFAULT '{}',
    -- The signing secret, whsec_<base64>. Kept readable: signing needs it.
    secret         text        NOT NULL,
    format         text        NOT NULL DEFAULT 'standard' CHECK (format IN ('standard', 'slack')),
    -- The person (or channel) the notifications reach; answer links are
    -- made out to them.
    recipient      text        CHECK (length(recipient) BETWEEN 1 AND 200),
    description    text        NOT NULL DEFAULT '' CHECK (length(description) <= 500),
    enabled        boolean     NOT NULL DEFAULT true,
    -- Why delivery disabled it (NULL: enabled, or disabled by a person).
    disabled_reason text,
    disabled_at    timestamptz,
    -- Every event numbered up to cursor has its delivery row (or was not
    -- wanted).
    cursor         bigint      NOT NULL,
    -- The first failed attempt since the last success: a day of failures
    -- disables the webhook.
    failing_since  timestamptz,
    created_by     text        NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (project_id, id)
);
CREATE INDEX webhooks_behind ON webhooks (cursor) WHERE enabled;

-- One row per (webhook, event): the primary key is the "exactly one
-- delivery record" of a webhook's event. A replica takes a due row by
-- setting locked_until (the database's clock) and lock_token; the result
-- of the attempt is written only while that lock is still its own, and a
-- replica that died mid-attempt frees the row when locked_until passes.
CREATE TABLE webhook_deliveries (
    project_id      uuid        NOT NULL,
    webhook_id      uuid        NOT NULL,
    seq             bigint      NOT NULL,
    event_type      text        NOT NULL,
    state           text        NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    locked_until    timestamptz,
    lock_token      uuid,
    last_status     integer,
    last_latency_ms integer,
    last_response   text,
    last_error      text,
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz,
    PRIMARY KEY (project_id, webhook_id, seq),
    FOREIGN KEY (project_id, webhook_id) REFERENCES webhooks (project_id, id) ON DELETE CASCADE,
    CHECK ((state = 'pending') = (finished_at IS NULL))
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_recent ON webhook_deliveries (project_id, webhook_id, seq DESC);

-- Every attempt of a delivery, as it ended: append-only.
CREATE TABLE webhook_attempts (
    project_id  uuid        NOT NULL,
    webhook_id  uuid        NOT NULL,
    seq         bigint      NOT NULL,
    attempt     integer     NOT NULL,
    at          timestamptz NOT NULL,
    status      integer,
    latency_ms  integer     NOT NULL,
    response    text,
    error       text,
    PRIMARY KEY (project_id, webhook_id, seq, attempt),
    FOREIGN KEY (project_id, webhook_id, seq) REFERENCES webhook_deliveries (project_id, webhook_id, seq) ON DELETE CASCADE
);
CREATE TRIGGER webhook_attempts_append_only BEFORE UPDATE ON webhook_attempts
    FOR EACH ROW EXECUTE FUNCTION append_only_guard();

-- Answer links: a signed, single-use, short-lived link that lets the
-- recipient of a notification answer one attention request without a
-- sign-in session. Only the hash of the link's secret is kept.
--
-- Whether a project's notifications carry answer links is a setting of
-- the project's notifications (off until an admin turns it on).
CREATE TABLE notification_settings (
    project_id        uuid    NOT NULL PRIMARY KEY REFERENCES projects (id),
    answer_links      boolean NOT NULL DEFAULT false,
    answer_link_ttl_s integer NOT NULL DEFAULT 86400 CHECK (answer_link_ttl_s BETWEEN 60 AND 604800)
);
CREATE TABLE answer_links (
    project_id   uuid        NOT NULL,
    id           uuid        NOT NULL DEFAULT gen_random_uuid(),
    attention_id uuid        NOT NULL,
    recipient    text        NOT NULL CHECK (length(recipient) BETWEEN 1 AND 200),
    secret_hash  bytea       NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    PRIMARY KEY (project_id, id),
    FOREIGN KEY (project_id, attention_id) REFERENCES attention_requests (project_id, id),
    CHECK (expires_at > created_at)
);
CREATE INDEX answer_links_by_request ON answer_links (project_id, attention_id);

-- +goose Down
DROP TABLE answer_links;
DROP TABLE notification_settings;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
