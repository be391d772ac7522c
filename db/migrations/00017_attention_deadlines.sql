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

-- The item triggers of 00016: a transaction's first item event no longer
-- looks for an earlier one of its own (workgraph.item_events says whether
-- the transaction wrote item events), so a claim's and a completion's item
-- change costs no index probe of events.
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
    -- workgraph.item_events says this transaction wrote item events
    -- already (a setting of the transaction, so a claim or a completion,
    -- whose item changes once, never looks for one).
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

-- +goose Down
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
