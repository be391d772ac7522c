-- +goose Up
-- The event log (outbox): every change a person or another system cares
-- about appends one row here in the transaction that makes the change, so a
-- change and its event commit or roll back together. Readers (long polls,
-- server-sent event streams, webhook delivery) follow it by seq.
--
-- seq comes from one sequence for all projects: it increases within a
-- project (with gaps where another project's event or a rolled-back
-- transaction took a number), and writers take no lock to get it, so
-- writers of one project never queue behind each other for a counter. A
-- number is taken before its transaction commits, so numbers can become
-- visible out of order; readers only go up to a horizon below which every
-- number is final (events.Horizon, docs/adr/0006-event-log.md). The row
-- records its transaction's id, by which a transaction finds its own
-- events.
--
-- CACHE 1 (the default) matters: the horizon reads the sequence's
-- last_value as the newest number any session holds.
CREATE SEQUENCE events_seq AS bigint CACHE 1;

CREATE TABLE events (
    project_id   uuid        NOT NULL REFERENCES projects (id),
    seq          bigint      NOT NULL,
    -- The writing transaction (pg_current_xact_id).
    xid          xid8        NOT NULL,
    -- A dotted name: item.created, lease.granted, attention.opened, ...
    type         text        NOT NULL CHECK (type ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$' AND length(type) <= 64),
    at           timestamptz NOT NULL,
    -- Who did it: token:<name>, worker:<id>, user:<name>, or system.
    actor        text        NOT NULL CHECK (length(actor) BETWEEN 1 AND 300),
    item_id      uuid,
    lease_id     uuid,
    attention_id uuid,
    -- Ids and the fields that changed; small by design.
    payload      jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(payload) = 'object'),
    PRIMARY KEY (project_id, seq)
);
-- One item's events, and the stream over all projects (admins).
CREATE INDEX events_by_item ON events (project_id, item_id, seq) WHERE item_id IS NOT NULL;
CREATE INDEX events_all ON events (seq);

-- +goose StatementBegin
CREATE FUNCTION events_number() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.xid := pg_current_xact_id();
    NEW.seq := nextval('events_seq');
    NEW.at := coalesce(NEW.at, clock_timestamp());
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER events_number BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_number();

-- Events are never changed. They are deleted only by the retention
-- service, which says so for its own transaction (SET LOCAL
-- workgraph.events_retention = 'on'), and only once older than a day.
-- +goose StatementBegin
CREATE FUNCTION events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE'
       AND current_setting('workgraph.events_retention', true) = 'on'
       AND OLD.at < clock_timestamp() - interval '1 day' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'events are append-only (% refused)', TG_OP
        USING ERRCODE = 'WG001';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_guard();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION append_only_guard();

-- +goose Down
DROP TABLE events;
DROP FUNCTION events_guard();
DROP FUNCTION events_number();
DROP SEQUENCE events_seq;
