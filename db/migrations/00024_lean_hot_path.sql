-- +goose Up
-- The lean hot path (docs/adr/0007-lean-hot-path.md).
--
-- item.state_changed: the trigger looks for its own transaction's event of
-- the item (to rewrite it) only when the transaction has written an item
-- event at all. The item event triggers say so in the transaction-local
-- setting workgraph.item_events; a rolled-back savepoint takes the setting
-- back with its events. A claim or a completion in its own transaction,
-- the common case, then inserts its event without reading the log.
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
    found_mine boolean := false;
BEGIN
    IF current_setting('workgraph.item_events', true) = 'on' THEN
        SELECT * INTO mine FROM events e
        WHERE e.project_id = NEW.project_id AND e.item_id = NEW.id
          AND e.xid = pg_current_xact_id() AND e.type IN ('item.created', 'item.state_changed')
        ORDER BY e.seq DESC LIMIT 1;
        found_mine := FOUND;
    END IF;
    IF NOT found_mine THEN
        PERFORM set_config('workgraph.item_events', 'on', true);
        INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
        VALUES (NEW.project_id, 'item.state_changed', stamp, events_actor(), NEW.id,
                coalesce(NEW.active_lease_id, OLD.active_lease_id),
                jsonb_strip_nulls(jsonb_build_object(
                    'from', items_state(OLD.status, OLD.active_lease_id, OLD.open_attention,
                                        OLD.unmet_dependencies, OLD.open_children,
                                        OLD.not_before, OLD.updated_at),
                    'to', to_state, 'epoch', NEW.epoch, 'retry_after', retry)));
        RETURN NULL;
    END IF;
    PERFORM set_config('workgraph.events_rewrite', 'on', true);
    IF mine.type = 'item.created' THEN
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

-- One index fewer to write on every lease row version: an item's leases
-- are found by leases_project_id_item_id_epoch_key (project_id, item_id,
-- epoch), whose epoch order is the item's grant order, as seq's is.
DROP INDEX IF EXISTS leases_by_item;

-- +goose Down
CREATE INDEX IF NOT EXISTS leases_by_item ON leases (project_id, item_id, seq);
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
    PERFORM set_config('workgraph.events_rewrite', 'on', true);
    SELECT * INTO mine FROM events e
    WHERE e.project_id = NEW.project_id AND e.item_id = NEW.id
      AND e.xid = pg_current_xact_id() AND e.type IN ('item.created', 'item.state_changed')
    ORDER BY e.seq DESC LIMIT 1;
    IF NOT FOUND THEN
        INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
        VALUES (NEW.project_id, 'item.state_changed', stamp, events_actor(), NEW.id,
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
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_event_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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
