-- +goose Up
-- Event emission made cheap on the claim, heartbeat and completion path
-- (docs/adr/0006-event-log.md, "Addendum: the cost of emission"), with
-- the same events, numbers, actors and payloads as 00016 and 00017:
--
--   * An event's number, transaction and instant are column defaults
--     instead of a BEFORE INSERT trigger: seq is an identity column
--     GENERATED ALWAYS from the sequence events_seq (a writer cannot choose
--     a number; OVERRIDING SYSTEM VALUE is for restores only), xid the
--     writing transaction, at the database clock when the writer gives
--     none. Every insert into events still holds the table's
--     RowExclusiveLock before its number is taken (the lock is taken when
--     the statement opens the table), which is what the horizon relies on
--     (events.Horizon).
--   * The item events are written by statement-level triggers that read
--     the statement's transition tables: a statement that changes the
--     state of n items (a batch claim or completion, an expiry sweep, a
--     plan import) appends their n events in one INSERT ... SELECT, not n
--     trigger calls of one INSERT each, and looks for the transaction's
--     own earlier item events (to rewrite them, as 00016 describes) with
--     one query for all n, only when the transaction wrote item events
--     before (workgraph.item_events). Within a statement the item events
--     are numbered in the items' creation order (items.seq). They still
--     come after the statement's lease and attention events, which BEFORE
--     ROW triggers number as the rows are written (the actor those set is
--     read once per statement, as every row trigger of 00016 read it).
--   * The lease, attention, refusal and token triggers stay row triggers
--     (their events are numbered before the statement's item events, and
--     they name the actor of the statement's item changes).

-- Numbers: the sequence becomes the identity of events.seq, under the same
-- name and from the same value (the table is locked by the first ALTER, so
-- no writer takes a number in between).
ALTER TABLE events ALTER COLUMN xid SET DEFAULT pg_current_xact_id(),
                   ALTER COLUMN at SET DEFAULT clock_timestamp();
DROP TRIGGER events_number ON events;
DROP FUNCTION events_number();
ALTER SEQUENCE events_seq RENAME TO events_seq_00015;
ALTER TABLE events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (SEQUENCE NAME events_seq CACHE 1);
SELECT setval('events_seq', s.last_value, s.is_called) FROM events_seq_00015 s;
DROP SEQUENCE events_seq_00015;

-- No foreign key from events to projects: its check (a SELECT ... FOR KEY
-- SHARE of the project's row, per event) made every transaction that
-- writes an event lock the project's row, one MultiXact per transaction
-- under concurrency. An event's project is a project all the same: a
-- trigger copies it from the row it reports, whose own foreign key the
-- same statement checks (items and tokens to projects, leases to items,
-- attention requests to items, refusals to leases), and AppendEvent
-- takes it from the projects row it names (db/queries/events.sql).
-- Projects are never deleted.
ALTER TABLE events DROP CONSTRAINT events_project_id_fkey;

-- item.created: one row per inserted item, in insert order.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_event_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (project_id, type, at, actor, item_id, payload)
    SELECT n.project_id, 'item.created', n.created_at, n.created_by, n.id,
           jsonb_build_object('title', n.title, 'priority', n.priority, 'parent_id', n.parent_id,
                              'state', items_state(n.status, n.active_lease_id, n.open_attention,
                                                   n.unmet_dependencies, n.open_children,
                                                   n.not_before, n.updated_at))
    FROM created_items n
    ORDER BY n.seq;
    IF FOUND THEN
        PERFORM set_config('workgraph.item_events', 'on', true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER items_event_created ON items;
CREATE TRIGGER items_event_created AFTER INSERT ON items
    REFERENCING NEW TABLE AS created_items
    FOR EACH STATEMENT EXECUTE FUNCTION items_event_created();

-- item.state_changed, for a whole statement. A transaction reports an
-- item's change once, from the state it found to the state it leaves
-- (00016): when the transaction wrote item events before
-- (workgraph.item_events), its own latest item event of each changed item
-- is rewritten instead (an item.created takes the new state, a
-- state_changed takes the new "to", or is deleted when the item is back
-- where it started), in one statement for all of them, which the table's
-- guard allows while workgraph.events_rewrite says so.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_event_state() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('workgraph.item_events', true) IS DISTINCT FROM 'on' THEN
        WITH c AS (
            SELECT n.project_id, n.id, n.seq, n.epoch,
                   coalesce(n.active_lease_id, o.active_lease_id) AS lease_id,
                   items_state(o.status, o.active_lease_id, o.open_attention, o.unmet_dependencies,
                               o.open_children, o.not_before, o.updated_at) AS from_state,
                   items_state(n.status, n.active_lease_id, n.open_attention, n.unmet_dependencies,
                               n.open_children, n.not_before, n.updated_at) AS to_state,
                   CASE WHEN n.updated_at > o.updated_at THEN n.updated_at END AS stamp,
                   n.not_before, n.updated_at
            FROM new_items n
            JOIN old_items o ON o.project_id = n.project_id AND o.id = n.id
        )
        INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
        SELECT c.project_id, 'item.state_changed', coalesce(c.stamp, clock_timestamp()), events_actor(),
               c.id, c.lease_id,
               jsonb_strip_nulls(jsonb_build_object(
                   'from', c.from_state, 'to', c.to_state, 'epoch', c.epoch,
                   'retry_after', CASE WHEN c.to_state = 'blocked' AND c.not_before > c.updated_at
                                       THEN c.not_before END))
        FROM c
        WHERE c.from_state IS DISTINCT FROM c.to_state
        ORDER BY c.seq;
        IF FOUND THEN
            PERFORM set_config('workgraph.item_events', 'on', true);
        END IF;
        RETURN NULL;
    END IF;
    -- A statement trigger runs for every UPDATE of items, also for one
    -- that changed no item's state (a completion's ReleaseDependents of an
    -- item with no dependents): the rewrite's statement only for changes.
    IF NOT EXISTS (SELECT 1 FROM new_items n
                   JOIN old_items o ON o.project_id = n.project_id AND o.id = n.id
                   WHERE items_state(o.status, o.active_lease_id, o.open_attention, o.unmet_dependencies,
                                     o.open_children, o.not_before, o.updated_at)
                         IS DISTINCT FROM
                         items_state(n.status, n.active_lease_id, n.open_attention, n.unmet_dependencies,
                                     n.open_children, n.not_before, n.updated_at)) THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('workgraph.events_rewrite', 'on', true);
    WITH c AS (
        SELECT n.project_id, n.id, n.seq, n.epoch, n.active_lease_id,
               coalesce(n.active_lease_id, o.active_lease_id) AS lease_id,
               items_state(o.status, o.active_lease_id, o.open_attention, o.unmet_dependencies,
                           o.open_children, o.not_before, o.updated_at) AS from_state,
               items_state(n.status, n.active_lease_id, n.open_attention, n.unmet_dependencies,
                           n.open_children, n.not_before, n.updated_at) AS to_state,
               CASE WHEN n.updated_at > o.updated_at THEN n.updated_at END AS stamp,
               n.not_before, n.updated_at
        FROM new_items n
        JOIN old_items o ON o.project_id = n.project_id AND o.id = n.id
    ), changed AS (
        SELECT c.*, CASE WHEN c.to_state = 'blocked' AND c.not_before > c.updated_at
                         THEN c.not_before END AS retry_after
        FROM c
        WHERE c.from_state IS DISTINCT FROM c.to_state
    ), mine AS (
        -- Each item's own latest item event, by index (events_by_item).
        SELECT m.*
        FROM changed ch
        CROSS JOIN LATERAL (
            SELECT e.project_id, e.seq, e.type, e.lease_id, e.payload, e.item_id
            FROM events e
            WHERE e.project_id = ch.project_id AND e.item_id = ch.id
              AND e.xid = pg_current_xact_id() AND e.type IN ('item.created', 'item.state_changed')
            ORDER BY e.seq DESC
            LIMIT 1) m
    ), created AS (
        UPDATE events e
        SET payload = jsonb_set(m.payload, '{state}', to_jsonb(ch.to_state))
        FROM mine m
        JOIN changed ch ON ch.id = m.item_id
        WHERE m.type = 'item.created' AND e.project_id = m.project_id AND e.seq = m.seq
    ), back AS (
        DELETE FROM events e
        USING mine m
        JOIN changed ch ON ch.id = m.item_id
        WHERE m.type = 'item.state_changed' AND m.payload->>'from' = ch.to_state
          AND e.project_id = m.project_id AND e.seq = m.seq
    ), moved AS (
        UPDATE events e
        SET at = coalesce(ch.stamp, clock_timestamp()),
            lease_id = coalesce(ch.active_lease_id, m.lease_id),
            payload = jsonb_strip_nulls(m.payload || jsonb_build_object(
                'to', ch.to_state, 'epoch', ch.epoch, 'retry_after', ch.retry_after))
        FROM mine m
        JOIN changed ch ON ch.id = m.item_id
        WHERE m.type = 'item.state_changed' AND (m.payload->>'from' = ch.to_state) IS NOT TRUE
          AND e.project_id = m.project_id AND e.seq = m.seq
    )
    INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
    SELECT ch.project_id, 'item.state_changed', coalesce(ch.stamp, clock_timestamp()), events_actor(),
           ch.id, ch.lease_id,
           jsonb_strip_nulls(jsonb_build_object('from', ch.from_state, 'to', ch.to_state,
                                                'epoch', ch.epoch, 'retry_after', ch.retry_after))
    FROM changed ch
    WHERE NOT EXISTS (SELECT 1 FROM mine m WHERE m.item_id = ch.id)
    ORDER BY ch.seq;
    PERFORM set_config('workgraph.events_rewrite', 'off', true);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER items_event_state ON items;
CREATE TRIGGER items_event_state AFTER UPDATE ON items
    REFERENCING OLD TABLE AS old_items NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION items_event_state();

-- +goose Down
ALTER TABLE events ADD CONSTRAINT events_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects (id);
DROP TRIGGER items_event_state ON items;
DROP TRIGGER items_event_created ON items;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_event_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('workgraph.item_events', 'on', true);
    INSERT INTO events (project_id, type, at, actor, item_id, payload)
    VALUES (NEW.project_id, 'item.created', NEW.created_at, NEW.created_by, NEW.id,
            jsonb_build_object('title', NEW.title, 'priority', NEW.priority,
                               'parent_id', NEW.parent_id,
                               'state', items_state(NEW.status, NEW.active_lease_id, NEW.open_attention,
                                                    NEW.unmet_dependencies, NEW.open_children,
                                                    NEW.not_before, NEW.updated_at)));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_event_state() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    to_state text := items_state(NEW.status, NEW.active_lease_id, NEW.open_attention,
                                 NEW.unmet_dependencies, NEW.open_children,
                                 NEW.not_before, NEW.updated_at);
    stamp timestamptz := CASE WHEN NEW.updated_at > OLD.updated_at THEN NEW.updated_at END;
    retry timestamptz := CASE WHEN to_state = 'blocked' AND NEW.not_before > NEW.updated_at
                              THEN NEW.not_before END;
    mine events%ROWTYPE;
BEGIN
    IF current_setting('workgraph.item_events', true) = 'on' THEN
        PERFORM set_config('workgraph.events_rewrite', 'on', true);
        SELECT * INTO mine FROM events e
        WHERE e.project_id = NEW.project_id AND e.item_id = NEW.id
          AND e.xid = pg_current_xact_id() AND e.type IN ('item.created', 'item.state_changed')
        ORDER BY e.seq DESC LIMIT 1;
    ELSE
        PERFORM set_config('workgraph.item_events', 'on', true);
    END IF;
    IF mine.seq IS NULL THEN
        INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
        VALUES (NEW.project_id, 'item.state_changed', coalesce(stamp, clock_timestamp()), events_actor(), NEW.id,
                coalesce(NEW.active_lease_id, OLD.active_lease_id),
                jsonb_strip_nulls(jsonb_build_object(
                    'from', items_state(OLD.status, OLD.active_lease_id, OLD.open_attention,
                                        OLD.unmet_dependencies, OLD.open_children,
                                        OLD.not_before, OLD.updated_at),
                    'to', to_state, 'epoch', NEW.epoch, 'retry_after', retry)));
    ELSIF mine.type = 'item.created' THEN
        UPDATE events SET payload = jsonb_set(mine.payload, '{state}', to_jsonb(to_state))
        WHERE project_id = mine.project_id AND seq = mine.seq;
    ELSIF mine.payload->>'from' = to_state THEN
        DELETE FROM events WHERE project_id = mine.project_id AND seq = mine.seq;
    ELSE
        UPDATE events
        SET at = coalesce(stamp, clock_timestamp()),
            lease_id = coalesce(NEW.active_lease_id, mine.lease_id),
            payload = jsonb_strip_nulls(mine.payload || jsonb_build_object(
                'to', to_state, 'epoch', NEW.epoch, 'retry_after', retry))
        WHERE project_id = mine.project_id AND seq = mine.seq;
    END IF;
    PERFORM set_config('workgraph.events_rewrite', 'off', true);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER items_event_created AFTER INSERT ON items
    FOR EACH ROW EXECUTE FUNCTION items_event_created();
CREATE TRIGGER items_event_state AFTER UPDATE ON items
    FOR EACH ROW
    WHEN (items_state(OLD.status, OLD.active_lease_id, OLD.open_attention, OLD.unmet_dependencies,
                      OLD.open_children, OLD.not_before, OLD.updated_at)
          IS DISTINCT FROM
          items_state(NEW.status, NEW.active_lease_id, NEW.open_attention, NEW.unmet_dependencies,
                      NEW.open_children, NEW.not_before, NEW.updated_at))
    EXECUTE FUNCTION items_event_state();
CREATE SEQUENCE events_seq_00043 AS bigint CACHE 1;
SELECT setval('events_seq_00043', s.last_value, s.is_called) FROM events_seq s;
ALTER TABLE events ALTER COLUMN seq DROP IDENTITY;
ALTER SEQUENCE events_seq_00043 RENAME TO events_seq;
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
ALTER TABLE events ALTER COLUMN xid DROP DEFAULT,
                   ALTER COLUMN at DROP DEFAULT;
