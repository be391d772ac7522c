-- +goose Up
-- A question for a person about an item. Opened by the worker holding the
-- item's lease (fenced by lease id + epoch), by the system (repeated expiry or
-- failure) or by a person (a hold). A blocking request counts in
-- items.open_attention until it is resolved or dismissed. Resolution is
-- written once; requests are never deleted.
CREATE TABLE attention_requests (
    project_id        uuid        NOT NULL,
    id                uuid        NOT NULL DEFAULT gen_random_uuid(),
    seq               bigint      NOT NULL GENERATED ALWAYS AS IDENTITY,
    item_id           uuid        NOT NULL,
    lease_id          uuid,
    epoch             bigint,
    source            text        NOT NULL CHECK (source IN ('worker', 'system', 'person')),
    reason            text        NOT NULL DEFAULT 'question'
        CHECK (reason IN ('question', 'repeated_expiry', 'repeated_failure', 'hold')),
    requested_by      text        NOT NULL,
    question          text        NOT NULL CHECK (length(question) BETWEEN 1 AND 65536),
    suggested_answers text[]      NOT NULL DEFAULT '{}',
    context           jsonb,
    blocking          boolean     NOT NULL DEFAULT true,
    state             text        NOT NULL DEFAULT 'open'
        CHECK (state IN ('open', 'resolved', 'dismissed')),
    answer            text,
    resolved_by       text,
    resolved_at       timestamptz,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (project_id, id),
    FOREIGN KEY (project_id, item_id) REFERENCES items (project_id, id),
    FOREIGN KEY (project_id, lease_id) REFERENCES leases (project_id, id),
    CHECK ((state = 'open') = (resolved_at IS NULL)),
    CHECK ((lease_id IS NULL) = (epoch IS NULL))
);
CREATE INDEX attention_open ON attention_requests (project_id, seq) WHERE state = 'open';
CREATE INDEX attention_by_item ON attention_requests (project_id, item_id, seq);
CREATE INDEX attention_by_lease ON attention_requests (project_id, lease_id) WHERE lease_id IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION attention_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'attention request % is history and cannot be deleted', OLD.id
            USING ERRCODE = 'WG001';
    END IF;
    IF OLD.state <> 'open' THEN
        RAISE EXCEPTION 'attention request % is % and immutable', OLD.id, OLD.state
            USING ERRCODE = 'WG001';
    END IF;
    IF NEW.project_id <> OLD.project_id OR NEW.id <> OLD.id OR NEW.item_id <> OLD.item_id
       OR NEW.lease_id IS DISTINCT FROM OLD.lease_id OR NEW.question <> OLD.question
       OR NEW.blocking <> OLD.blocking OR NEW.created_at <> OLD.created_at THEN
        RAISE EXCEPTION 'attention request % identity fields are immutable', OLD.id
            USING ERRCODE = 'WG001';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER attention_immutable BEFORE UPDATE OR DELETE ON attention_requests
    FOR EACH ROW EXECUTE FUNCTION attention_guard();
CREATE TRIGGER attention_no_truncate BEFORE TRUNCATE ON attention_requests
    FOR EACH STATEMENT EXECUTE FUNCTION append_only_guard();

-- +goose Down
DROP TABLE attention_requests;
DROP FUNCTION attention_guard();
