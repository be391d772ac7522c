-- +goose Up
-- The workgraph_ready notification names the item that became ready, so a
-- listener can hand it to one waiting claimer whose filter takes it:
--   "<project_id> {"item": ..., "labels": [...], "worker": ..., "token": ...}"
-- worker and token are the continuity reservation (null when the item is
-- not reserved at commit): while it lasts only that worker and token can
-- claim the item. One notification per item that is still ready at commit
-- (the payloads of two items differ, so PostgreSQL does not fold them). A
-- payload that would not fit in a notification names the project only;
-- listeners then wake every claimer of the project.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_notify_ready() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    it record;
    reserved boolean;
    payload text;
BEGIN
    SELECT i.labels, i.preferred_worker, i.preferred_token, i.preferred_until INTO it
    FROM items i
    WHERE i.project_id = NEW.project_id AND i.id = NEW.id AND i.ready;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    -- The claim's test (ClaimItem): reserved unless the window has passed.
    reserved := it.preferred_worker IS NOT NULL
                AND coalesce(it.preferred_until > statement_timestamp(), true);
    payload := NEW.project_id::text || ' ' || json_build_object(
        'item', NEW.id,
        'labels', it.labels,
        'worker', CASE WHEN reserved THEN it.preferred_worker END,
        'token', CASE WHEN reserved THEN it.preferred_token END)::text;
    IF octet_length(payload) > 7900 THEN
        payload := NEW.project_id::text;
    END IF;
    PERFORM pg_notify('workgraph_ready', payload);
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
