-- +goose Up
-- Deadlines on questions. A request may be due (due_at: its creation plus
-- the ask's due_in, or for a worker's question the project's
-- attention_due_ms); when due_at passes by the database clock the deadline
-- sweeper marks it overdue (overdue_at, once), writes attention.overdue
-- and applies on_overdue:
--   escalate        the event says escalate: true (a webhook escalates);
--   default_answer  the request is answered with default_answer by
--                   "system" (answered_by_default);
--   release         the request stays open but stops blocking: the item
--                   goes back to circulation.
-- NULL on_overdue: only the event.
ALTER TABLE projects
    ADD COLUMN attention_due_ms bigint CHECK (attention_due_ms > 0);
ALTER TABLE attention_requests
    ADD COLUMN due_at timestamptz,
    ADD COLUMN on_overdue text CHECK (on_overdue IN ('escalate', 'default_answer', 'release')),
    ADD COLUMN default_answer text CHECK (length(default_answer) BETWEEN 1 AND 65536),
    ADD COLUMN overdue_at timestamptz,
    ADD COLUMN answered_by_default boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT attention_requests_overdue_policy
        CHECK (on_overdue IS NULL OR due_at IS NOT NULL),
    ADD CONSTRAINT attention_requests_default_answer
        CHECK (on_overdue IS DISTINCT FROM 'default_answer' OR default_answer IS NOT NULL),
    ADD CONSTRAINT attention_requests_by_default
        CHECK (NOT answered_by_default OR (state = 'resolved' AND resolved_by = 'system'));
-- The sweeper's scan: open requests not yet overdue, by deadline.
CREATE INDEX attention_due ON attention_requests (due_at)
    WHERE state = 'open' AND overdue_at IS NULL AND due_at IS NOT NULL;

-- The guard of 00004, now allowing an open request to become overdue once
-- and, by the release policy, to stop blocking (and never to start again).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION attention_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
       OR (NEW.blocking <> OLD.blocking AND NOT (OLD.blocking AND NOT NEW.blocking AND OLD.overdue_at IS NULL
                                                 AND NEW.overdue_at IS NOT NULL AND OLD.on_overdue = 'release'))
       OR NEW.created_at <> OLD.created_at
       OR NEW.due_at IS DISTINCT FROM OLD.due_at OR NEW.on_overdue IS DISTINCT FROM OLD.on_overdue
       OR NEW.default_answer IS DISTINCT FROM OLD.default_answer
       OR (OLD.overdue_at IS NOT NULL AND NEW.overdue_at IS DISTINCT FROM OLD.overdue_at) THEN
        RAISE EXCEPTION 'attention request % identity fields are immutable', OLD.id
            USING ERRCODE = 'WG001';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- The closing event says when the answer was the default one.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION attention_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    who text;
    kind text;
    at timestamptz;
BEGIN
    IF TG_OP = 'INSERT' AND NEW.source = 'worker' AND NEW.lease_id IS NOT NULL THEN
        who := (SELECT 'worker:' || l.worker FROM leases l
                WHERE l.project_id = NEW.project_id AND l.id = NEW.lease_id);
        kind := 'attention.opened';
        at := NEW.created_at;
    ELSIF TG_OP = 'INSERT' THEN
        who := NEW.requested_by;
        kind := 'attention.opened';
        at := NEW.created_at;
    ELSE
        who := NEW.resolved_by;
        kind := CASE NEW.state WHEN 'resolved' THEN 'attention.answered' ELSE 'attention.dismissed' END;
        at := NEW.resolved_at;
    END IF;
    PERFORM set_config('workgraph.actor', who, true);
    INSERT INTO events (project_id, type, at, actor, item_id, lease_id, attention_id, payload)
    VALUES (NEW.project_id, kind, at, who, NEW.item_id, NEW.lease_id, NEW.id,
            jsonb_strip_nulls(jsonb_build_object(
                'attention_id', NEW.id, 'item_id', NEW.item_id, 'lease_id', NEW.lease_id,
                'reason', NEW.reason, 'blocking', NEW.blocking, 'source', NEW.source,
                'decision', NEW.decision, 'due_at', NEW.due_at,
                'default_answer', CASE WHEN NEW.answered_by_default THEN true END)));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION attention_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
DROP INDEX attention_due;
ALTER TABLE attention_requests
    DROP CONSTRAINT attention_requests_by_default,
    DROP CONSTRAINT attention_requests_default_answer,
    DROP CONSTRAINT attention_requests_overdue_policy,
    DROP COLUMN answered_by_default,
    DROP COLUMN overdue_at,
    DROP COLUMN default_answer,
    DROP COLUMN on_overdue,
    DROP COLUMN due_at;
ALTER TABLE projects DROP COLUMN attention_due_ms;
