-- +goose Up
-- Retention of webhook deliveries: the records of finished deliveries
-- (delivered or failed) are deleted once older than the deliveries'
-- retention (package webhook, Retention), and by nothing else. A delivery
-- row may be deleted only
--   - by the retention service's transaction (it sets
--     workgraph.deliveries_retention), when finished more than a day ago
--     by the database's clock, or
--   - with its webhook (DeleteWebhook's cascade: the webhook row is gone).
-- A pending delivery is never pruned: it is work still to do. Pruning a
-- record never makes a second one: fan-out only adds events numbered
-- after the webhook's cursor.
--
-- A delivery's attempts (append-only since 00018) may now be deleted only
-- with their delivery (the cascade of either deletion above).
-- +goose StatementBegin
CREATE FUNCTION webhook_deliveries_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('workgraph.deliveries_retention', true) = 'on'
       AND OLD.state <> 'pending'
       AND OLD.finished_at < clock_timestamp() - interval '1 day' THEN
        RETURN OLD;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.project_id = OLD.project_id AND w.id = OLD.webhook_id) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'webhook deliveries are deleted only by retention or with their webhook'
        USING ERRCODE = 'WG001';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER webhook_deliveries_delete_guard BEFORE DELETE ON webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION webhook_deliveries_guard();
CREATE TRIGGER webhook_deliveries_no_truncate BEFORE TRUNCATE ON webhook_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION append_only_guard();

-- +goose StatementBegin
CREATE FUNCTION webhook_attempts_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                   WHERE d.project_id = OLD.project_id AND d.webhook_id = OLD.webhook_id AND d.seq = OLD.seq) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'webhook attempts are deleted only with their delivery'
        USING ERRCODE = 'WG001';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER webhook_attempts_delete_guard BEFORE DELETE ON webhook_attempts
    FOR EACH ROW EXECUTE FUNCTION webhook_attempts_guard();
CREATE TRIGGER webhook_attempts_no_truncate BEFORE TRUNCATE ON webhook_attempts
    FOR EACH STATEMENT EXECUTE FUNCTION append_only_guard();

-- The retention's work: a project's finished deliveries, oldest first.
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (project_id, finished_at)
    WHERE state <> 'pending';

-- +goose Down
DROP INDEX webhook_deliveries_finished;
DROP TRIGGER webhook_attempts_no_truncate ON webhook_attempts;
DROP TRIGGER webhook_attempts_delete_guard ON webhook_attempts;
DROP FUNCTION webhook_attempts_guard();
DROP TRIGGER webhook_deliveries_no_truncate ON webhook_deliveries;
DROP TRIGGER webhook_deliveries_delete_guard ON webhook_deliveries;
DROP FUNCTION webhook_deliveries_guard();
