-- +goose Up
-- The events of row changes are written by triggers, in the statement that
-- changes the row (docs/adr/0006-event-log.md): a code path that writes a
-- lease, an item's state or an attention request cannot forget its event,
-- and the claim, heartbeat and completion statements keep their round
-- trips. The rows record who acted (a lease's worker, a request's
-- requested_by and resolved_by, an item's created_by); changes whose row
-- does not say are told by the transaction's workgraph.actor setting
-- (events.SetActor), which the lease and attention triggers also set, so
-- the item state changes a lease or an answer causes are the worker's or
-- the person's. The instant of each event is the row's own stamp (the
-- database clock, or a test's stub clock the statement was given).
--
-- Events Go writes itself (events.Append): item.updated, plan.imported,
-- attention.overdue.

-- The derived state of an item as stored (graph's package documentation):
-- a retry backoff blocks while not_before is after the row's last stamp.
-- +goose StatementBegin
CREATE FUNCTION items_state(status text, active_lease uuid, open_attention integer,
                            unmet integer, children integer, not_before timestamptz,
                            stamped timestamptz)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN status <> 'open' THEN status
        WHEN active_lease IS NOT NULL THEN 'leased'
        WHEN open_attention > 0 THEN 'attention'
        WHEN unmet > 0 OR children > 0 OR not_before > stamped THEN 'blocked'
        ELSE 'ready' END
$$;
-- +goose StatementEnd

-- The actor of a transaction's changes whose rows do not record one.
-- +goose StatementBegin
CREATE FUNCTION events_actor() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT coalesce(nullif(current_setting('workgraph.actor', true), ''), 'system')
$$;
-- +goose StatementEnd

-- item.created: every inserted item (a plan import's too).
-- +goose StatementBegin
CREATE FUNCTION items_event_created() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER items_event_created AFTER INSERT ON items
    FOR EACH ROW EXECUTE FUNCTION items_event_created();

-- item.state_changed: an update that changes the derived state. A
-- transaction reports an item's change once, from the state it found to
-- the state it leaves (a lease ended for a question frees the item for an
-- instant before the request holds it: the log says leased -> attention,
-- never an uncommitted "ready"): a later change of the same item in the
-- same transaction rewrites the transaction's own, uncommitted event (its
-- item.created, or its state_changed, deleted when the item is back where
-- it started). AFTER the statement's rows, so the actor that a lease row
-- of the same statement set (the claim's CTE) is known.
-- +goose StatementBegin
CREATE FUNCTION items_event_state() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER items_event_state AFTER UPDATE ON items
    FOR EACH ROW
    WHEN (items_state(OLD.status, OLD.active_lease_id, OLD.open_attention, OLD.unmet_dependencies,
                      OLD.open_children, OLD.not_before, OLD.updated_at)
          IS DISTINCT FROM
          items_state(NEW.status, NEW.active_lease_id, NEW.open_attention, NEW.unmet_dependencies,
                      NEW.open_children, NEW.not_before, NEW.updated_at))
    EXECUTE FUNCTION items_event_state();

-- The item events a transaction wrote stay its own to rewrite until it
-- commits, by the trigger above only (it says so for the duration of its
-- rewrite: workgraph.events_rewrite); every other event, and every
-- committed one, is never changed, and deleted only by retention.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('workgraph.events_rewrite', true) = 'on'
       AND OLD.xid = pg_current_xact_id() AND OLD.type IN ('item.created', 'item.state_changed')
       AND (TG_OP = 'DELETE' OR (NEW.project_id = OLD.project_id AND NEW.seq = OLD.seq
                                 AND NEW.xid = OLD.xid AND NEW.type = OLD.type
                                 AND NEW.item_id = OLD.item_id)) THEN
        RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    IF TG_OP = 'DELETE'
       AND current_setting('workgraph.events_retention', true) = 'on'
       AND OLD.at < clock_timestamp() - interval '1 day' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'events are append-only (% refused)', TG_OP
        USING ERRCODE = 'WG001';
END;
$$;
-- +goose StatementEnd

-- lease.granted and lease.ended. BEFORE the row is written, so that the
-- actor is set before the AFTER triggers of the statement's item rows run.
-- The worker acts, except for an expiry (system) and a person's cancel
-- (outcome_detail.by).
-- +goose StatementBegin
CREATE FUNCTION leases_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    who text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        who := 'worker:' || NEW.worker;
        PERFORM set_config('workgraph.actor', who, true);
        INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
        VALUES (NEW.project_id, 'lease.granted', NEW.acquired_at, who, NEW.item_id, NEW.id,
                jsonb_build_object('lease_id', NEW.id, 'item_id', NEW.item_id, 'epoch', NEW.epoch,
                                   'worker', NEW.worker, 'expires_at', NEW.expires_at));
        RETURN NEW;
    END IF;
    who := CASE NEW.outcome
        WHEN 'expired' THEN 'system'
        WHEN 'cancelled' THEN coalesce(NEW.outcome_detail->>'by', events_actor())
        ELSE 'worker:' || NEW.worker END;
    PERFORM set_config('workgraph.actor', who, true);
    INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
    VALUES (NEW.project_id, 'lease.ended', NEW.ended_at, who, NEW.item_id, NEW.id,
            jsonb_build_object('lease_id', NEW.id, 'item_id', NEW.item_id, 'epoch', NEW.epoch,
                               'worker', NEW.worker, 'outcome', NEW.outcome));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER leases_event_granted BEFORE INSERT ON leases
    FOR EACH ROW EXECUTE FUNCTION leases_event();
CREATE TRIGGER leases_event_ended BEFORE UPDATE ON leases
    FOR EACH ROW WHEN (OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL)
    EXECUTE FUNCTION leases_event();

-- lease.refused: each refused report counted in lease_refusals (a stale
-- call, a conflicting repeated result), by the worker that made it.
-- +goose StatementBegin
CREATE FUNCTION lease_refusals_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    l leases%ROWTYPE;
BEGIN
    SELECT * INTO l FROM leases WHERE project_id = NEW.project_id AND id = NEW.lease_id;
    INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
    VALUES (NEW.project_id, 'lease.refused', NEW.last_at, 'worker:' || l.worker, l.item_id, NEW.lease_id,
            jsonb_build_object('lease_id', NEW.lease_id, 'item_id', l.item_id,
                               'epoch', (NEW.recent->0->>'epoch')::bigint, 'worker', l.worker,
                               'operation', NEW.last_operation, 'kind', NEW.kind, 'calls', NEW.calls));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER lease_refusals_event AFTER INSERT OR UPDATE ON lease_refusals
    FOR EACH ROW EXECUTE FUNCTION lease_refusals_event();

-- attention.opened, attention.answered, attention.dismissed: by the
-- worker of the lease that asked, else the request's requested_by, and by
-- its resolved_by. BEFORE, for the actor (the item
-- row a request holds or releases is written in the same transaction).
-- +goose StatementBegin
CREATE FUNCTION attention_event() RETURNS trigger LANGUAGE plpgsql AS $$
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
                'decision', NEW.decision)));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER attention_event_opened BEFORE INSERT ON attention_requests
    FOR EACH ROW EXECUTE FUNCTION attention_event();
CREATE TRIGGER attention_event_closed BEFORE UPDATE ON attention_requests
    FOR EACH ROW WHEN (OLD.state = 'open' AND NEW.state <> 'open')
    EXECUTE FUNCTION attention_event();

-- token.created and token.revoked, for the tokens of a project (an admin
-- token of no project has no project's log to be in).
-- +goose StatementBegin
CREATE FUNCTION tokens_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (project_id, type, at, actor, payload)
    VALUES (NEW.project_id,
            CASE TG_OP WHEN 'INSERT' THEN 'token.created' ELSE 'token.revoked' END,
            CASE TG_OP WHEN 'INSERT' THEN NEW.created_at ELSE NEW.revoked_at END,
            events_actor(),
            jsonb_build_object('token_id', NEW.id, 'name', NEW.name, 'role', NEW.role));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER tokens_event_created AFTER INSERT ON tokens
    FOR EACH ROW WHEN (NEW.project_id IS NOT NULL) EXECUTE FUNCTION tokens_event();
CREATE TRIGGER tokens_event_revoked AFTER UPDATE ON tokens
    FOR EACH ROW WHEN (NEW.project_id IS NOT NULL AND OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
    EXECUTE FUNCTION tokens_event();

-- +goose Down
DROP TRIGGER tokens_event_revoked ON tokens;
DROP TRIGGER tokens_event_created ON tokens;
DROP FUNCTION tokens_event();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE'
       AND current_setting('workgraph.events_retention', true) = 'on'
       AND OLD.at < clock_timestamp() - interval '1 day' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'events are append-only (% refused)', TG_OP
        USING ERRCODE = 'WG001';
END;
$$;
-- +goose StatementEnd
DROP TRIGGER attention_event_closed ON attention_requests;
DROP TRIGGER attention_event_opened ON attention_requests;
DROP FUNCTION attention_event();
DROP TRIGGER lease_refusals_event ON lease_refusals;
DROP FUNCTION lease_refusals_event();
DROP TRIGGER leases_event_ended ON leases;
DROP TRIGGER leases_event_granted ON leases;
DROP FUNCTION leases_event();
DROP TRIGGER items_event_state ON items;
DROP FUNCTION items_event_state();
DROP TRIGGER items_event_created ON items;
DROP FUNCTION items_event_created();
DROP FUNCTION events_actor();
DROP FUNCTION items_state(text, uuid, integer, integer, integer, timestamptz, timestamptz);
