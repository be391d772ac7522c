-- +goose NO TRANSACTION
-- +goose Up
-- The trigram indexes of text search move off items, onto a table of the
-- texts alone (docs/adr/0007-lean-hot-path.md, "Addendum: the texts off
-- the claim's path").
--
-- Every claim rewrites its item's row without HOT (`ready` leaves the
-- claim index's predicate), and so do a completion's and a release's
-- writes of the item: each such update inserts a new entry in every index
-- of items, the two trigram GIN indexes of migration 00020 (one entry per
-- distinct trigram of title and body) among them. For an item whose body
-- is about 2 KB of prose, one such update wrote 58 WAL records and 33 KB
-- and took 0.83 ms, against 7 records, 1.3 KB and 0.07 ms for an item
-- without a body (EXPLAIN (ANALYZE, WAL), 200 items each): the cost of a
-- claim grew with the size of the task's description, which no claim
-- reads.
--
-- item_texts holds each item's title and body (a copy: items keeps them,
-- every read of an item stays as it is) and the trigram indexes. Triggers
-- keep it exact: an insert of items (a statement's rows at once, as a
-- plan import or COPY writes them) inserts the texts; an update that
-- changes a title or body (not a claim, heartbeat or completion, which set
-- neither) rewrites that item's texts. A search reads the indexes of
-- item_texts and then the items it found (graph.sql, ListItems and its
-- siblings).
--
-- The triggers are created before the copy of the existing texts, and
-- both write with ON CONFLICT, so an item written while this migration
-- runs is copied by one or the other. A replica of the previous version
-- searches items' own columns: without their indexes its searches read
-- the project's items (slower, the same answers) until it is upgraded.

CREATE TABLE IF NOT EXISTS item_texts (
    project_id uuid NOT NULL,
    item_id    uuid NOT NULL,
    title      text NOT NULL,
    body       text NOT NULL DEFAULT '',
    PRIMARY KEY (project_id, item_id),
    FOREIGN KEY (project_id, item_id) REFERENCES items (project_id, id) ON DELETE CASCADE ON UPDATE CASCADE
);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION item_texts_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO item_texts (project_id, item_id, title, body)
    SELECT n.project_id, n.id, n.title, n.body FROM inserted_items n
    ON CONFLICT (project_id, item_id) DO UPDATE SET title = EXCLUDED.title, body = EXCLUDED.body;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION item_texts_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO item_texts (project_id, item_id, title, body)
    VALUES (NEW.project_id, NEW.id, NEW.title, NEW.body)
    ON CONFLICT (project_id, item_id) DO UPDATE SET title = EXCLUDED.title, body = EXCLUDED.body;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE OR REPLACE TRIGGER items_texts_inserted AFTER INSERT ON items
    REFERENCING NEW TABLE AS inserted_items
    FOR EACH STATEMENT EXECUTE FUNCTION item_texts_inserted();
-- A row trigger that fires only for a statement naming title or body and
-- a row whose text changed: the claim's statements name neither.
CREATE OR REPLACE TRIGGER items_texts_updated AFTER UPDATE OF title, body ON items
    FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.body IS DISTINCT FROM NEW.body)
    EXECUTE FUNCTION item_texts_updated();

INSERT INTO item_texts (project_id, item_id, title, body)
SELECT i.project_id, i.id, i.title, i.body FROM items i
ON CONFLICT (project_id, item_id) DO NOTHING;

CREATE INDEX CONCURRENTLY IF NOT EXISTS item_texts_title_trgm ON item_texts USING gin (title gin_trgm_ops);
CREATE INDEX CONCURRENTLY IF NOT EXISTS item_texts_body_trgm ON item_texts USING gin (body gin_trgm_ops);
DROP INDEX CONCURRENTLY IF EXISTS items_title_trgm;
DROP INDEX CONCURRENTLY IF EXISTS items_body_trgm;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_title_trgm ON items USING gin (title gin_trgm_ops);
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_body_trgm ON items USING gin (body gin_trgm_ops);
DROP TRIGGER IF EXISTS items_texts_updated ON items;
DROP TRIGGER IF EXISTS items_texts_inserted ON items;
DROP FUNCTION IF EXISTS item_texts_updated();
DROP FUNCTION IF EXISTS item_texts_inserted();
DROP TABLE IF EXISTS item_texts;
