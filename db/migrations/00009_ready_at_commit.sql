-- +goose Up
-- The workgraph_ready notification is decided at commit, on the item's
-- final row. A transaction may pass through a ready row on its way to
-- another state (a decomposition frees the item, then gives it children);
-- notifying then would wake every claimer waiting on the project for
-- nothing. A row that became ready queues an event (deferred constraint
-- triggers), and at commit the event notifies only if the item is still
-- ready.
DROP TRIGGER items_ready_insert ON items;
DROP TRIGGER items_ready_update ON items;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_notify_ready() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM items
               WHERE project_id = NEW.project_id AND id = NEW.id AND ready) THEN
        PERFORM pg_notify('workgraph_ready', NEW.project_id::text);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE CONSTRAINT TRIGGER items_ready_insert AFTER INSERT ON items
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.ready) EXECUTE FUNCTION items_notify_ready();
CREATE CONSTRAINT TRIGGER items_ready_update AFTER UPDATE ON items
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.ready AND NOT OLD.ready) EXECUTE FUNCTION items_notify_ready();

-- +goose Down
DROP TRIGGER items_ready_insert ON items;
DROP TRIGGER items_ready_update ON items;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_notify_ready() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('workgraph_ready', NEW.project_id::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER items_ready_insert AFTER INSERT ON items
    FOR EACH ROW WHEN (NEW.ready) EXECUTE FUNCTION items_notify_ready();
CREATE TRIGGER items_ready_update AFTER UPDATE ON items
    FOR EACH ROW WHEN (NEW.ready AND NOT OLD.ready) EXECUTE FUNCTION items_notify_ready();
