-- +goose Up
-- The workgraph_ready notification names the item: "<project_id> <item_id>",
-- one notification per item that is still ready at commit (PostgreSQL folds
-- only identical payloads of one transaction, so an item that became ready
-- twice in a transaction still sends one). Listeners hand each notification
-- to one waiting claimer instead of waking every claimer of the project:
-- the count of notifications is the count of items that became ready.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_notify_ready() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM items
               WHERE project_id = NEW.project_id AND id = NEW.id AND ready) THEN
        PERFORM pg_notify('workgraph_ready', NEW.project_id::text || ' ' || NEW.id::text);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
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
