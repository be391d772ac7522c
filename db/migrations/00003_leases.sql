-- +goose Up
-- Every lease ever granted, kept forever. While a lease is active
-- (ended_at IS NULL) only its renewal fields may change; once it has ended
-- the row is frozen, and no row is ever deleted. Triggers enforce this so
-- that not even a bug in the server can rewrite history.
CREATE TABLE leases (
    project_id     uuid        NOT NULL,
    id             uuid        NOT NULL DEFAULT gen_random_uuid(),
    seq            bigint      NOT NULL GENERATED ALWAYS AS IDENTITY,
    item_id        uuid        NOT NULL,
    -- The fencing token: equal to the item's epoch at the time of the claim.
    epoch          bigint      NOT NULL CHECK (epoch > 0),
    worker         text        NOT NULL CHECK (length(worker) BETWEEN 1 AND 200),
    token_id       uuid,
    principal      text        NOT NULL,
    acquired_at    timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    heartbeat_at   timestamptz,
    heartbeats     integer     NOT NULL DEFAULT 0,
    progress       jsonb,
    -- The worker's own clock at its last report: diagnostic only, it never
    -- decides anything.
    worker_time    timestamptz,
    -- A person asked the worker to stop; answered on its next heartbeat.
    stop_requested_at timestamptz,
    stop_requested_by text,
    ended_at       timestamptz,
    outcome        text CHECK (outcome IN ('completed', 'released', 'failed', 'cancelled',
                                           'decomposed', 'attention_requested', 'expired')),
    outcome_detail jsonb,
    result         jsonb,
    PRIMARY KEY (project_id, id),
    UNIQUE (project_id, item_id, epoch),
    FOREIGN KEY (project_id, item_id) REFERENCES items (project_id, id),
    CHECK ((ended_at IS NULL) = (outcome IS NULL)),
    CHECK (outcome = 'completed' OR result IS NULL)
);
-- At most one active lease per item.
CREATE UNIQUE INDEX leases_one_active ON leases (project_id, item_id) WHERE ended_at IS NULL;
-- Expiry: per project (claim path) and across projects (sweeper).
CREATE INDEX leases_active_expiry ON leases (project_id, expires_at) WHERE ended_at IS NULL;
CREATE INDEX leases_expiry ON leases (expires_at) WHERE ended_at IS NULL;
CREATE INDEX leases_active_token ON leases (token_id) WHERE ended_at IS NULL;
-- History queries.
CREATE INDEX leases_history ON leases (project_id, seq);
CREATE INDEX leases_by_item ON leases (project_id, item_id, seq);
CREATE INDEX leases_by_worker ON leases (project_id, worker, seq);

-- +goose StatementBegin
CREATE FUNCTION leases_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'lease % is history and cannot be deleted', OLD.id
            USING ERRCODE = 'WG001';
    END IF;
    IF OLD.ended_at IS NOT NULL THEN
        RAISE EXCEPTION 'lease % ended (%) and is immutable', OLD.id, OLD.outcome
            USING ERRCODE = 'WG001';
    END IF;
    IF NEW.project_id <> OLD.project_id OR NEW.id <> OLD.id OR NEW.seq <> OLD.seq
       OR NEW.item_id <> OLD.item_id OR NEW.epoch <> OLD.epoch OR NEW.worker <> OLD.worker
       OR NEW.principal <> OLD.principal OR NEW.token_id IS DISTINCT FROM OLD.token_id
       OR NEW.acquired_at <> OLD.acquired_at THEN
        RAISE EXCEPTION 'lease % identity fields are immutable', OLD.id
            USING ERRCODE = 'WG001';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER leases_immutable BEFORE UPDATE OR DELETE ON leases
    FOR EACH ROW EXECUTE FUNCTION leases_guard();

-- +goose StatementBegin
CREATE FUNCTION append_only_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only (% refused)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'WG001';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER leases_no_truncate BEFORE TRUNCATE ON leases
    FOR EACH STATEMENT EXECUTE FUNCTION append_only_guard();

-- Reports about a lease that arrived when they could no longer change
-- anything: calls presenting a lease that was lost (stale_call), a repeated
-- completion whose result conflicts with the committed one
-- (conflicting_result). Append-only.
CREATE TABLE lease_observations (
    project_id  uuid        NOT NULL,
    id          uuid        NOT NULL DEFAULT gen_random_uuid(),
    seq         bigint      NOT NULL GENERATED ALWAYS AS IDENTITY,
    lease_id    uuid        NOT NULL,
    epoch       bigint      NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('stale_call', 'conflicting_result')),
    operation   text        NOT NULL,
    received_at timestamptz NOT NULL,
    worker_time timestamptz,
    payload     jsonb,
    PRIMARY KEY (project_id, id),
    FOREIGN KEY (project_id, lease_id) REFERENCES leases (project_id, id)
);
CREATE INDEX lease_observations_by_lease ON lease_observations (project_id, lease_id, seq);
CREATE TRIGGER lease_observations_append_only BEFORE UPDATE OR DELETE ON lease_observations
    FOR EACH ROW EXECUTE FUNCTION append_only_guard();
CREATE TRIGGER lease_observations_no_truncate BEFORE TRUNCATE ON lease_observations
    FOR EACH STATEMENT EXECUTE FUNCTION append_only_guard();

-- How many reports about a lease were refused, by kind. lease_observations
-- keeps only the first few of each kind (a worker that keeps talking after
-- losing its lease must not grow the table without bound); these counters
-- keep the full count and the time of the latest one. A counter, not
-- history: it is the one lease-related table whose rows change.
CREATE TABLE lease_refusals (
    project_id     uuid        NOT NULL,
    lease_id       uuid        NOT NULL,
    kind           text        NOT NULL CHECK (kind IN ('stale_call', 'conflicting_result')),
    calls          integer     NOT NULL CHECK (calls > 0),
    last_operation text        NOT NULL,
    last_at        timestamptz NOT NULL,
    -- The last few refused calls (newest first, at most 5), each with its
    -- call number: with the first ones in lease_observations, a person sees
    -- how a worker began and how it is going on after losing its lease.
    recent         jsonb       NOT NULL DEFAULT '[]',
    PRIMARY KEY (project_id, lease_id, kind),
    FOREIGN KEY (project_id, lease_id) REFERENCES leases (project_id, id)
);

-- +goose Down
DROP TABLE lease_refusals;
DROP TABLE lease_observations;
DROP TABLE leases;
DROP FUNCTION append_only_guard();
DROP FUNCTION leases_guard();
