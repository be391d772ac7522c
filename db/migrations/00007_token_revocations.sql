-- +goose Up
-- Every replica may cache verified tokens; a revocation (or any change of a
-- token row) is announced on channel workgraph_tokens with the token id, so
-- the caches drop it at once. A trigger, so that no way of revoking can
-- forget to announce it.
-- +goose StatementBegin
CREATE FUNCTION tokens_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('workgraph_tokens', OLD.id::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER tokens_changed AFTER UPDATE OR DELETE ON tokens
    FOR EACH ROW EXECUTE FUNCTION tokens_notify_change();

-- +goose Down
DROP TRIGGER tokens_changed ON tokens;
DROP FUNCTION tokens_notify_change();
