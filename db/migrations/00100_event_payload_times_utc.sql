-- +goose Up
-- Times inside event payloads in one form: RFC 3339 in UTC with "Z", the
-- form Go writes the rest of every answer in (event "at", REST fields).
-- jsonb_build_object wrote a timestamptz as to_jsonb does, in the
-- session's TimeZone ("+00:00" on a UTC server, "+01:00" on another), so
-- lease.granted's expires_at, attention events' due_at and
-- item.state_changed's retry_after came out unlike everything else. The
-- triggers now spell them with wg_json_time, whatever the session's
-- TimeZone. The events already stored keep the spelling they were written
-- with (the same instants, valid RFC 3339): the log is append-only, and
-- rewriting it would hold every writer of events (every claim) behind one
-- UPDATE of all its lease.granted events during the upgrade.

-- wg_json_time is t as the JSON string Go's time.Time gives for the same
-- instant in UTC: "2006-01-02T15:04:05.999999Z" (fraction without its
-- trailing zeros, none for a whole second).
-- +goose StatementBegin
CREATE FUNCTION wg_json_time(t timestamptz) RETURNS text
LANGUAGE sql STABLE STRICT AS $$
    SELECT CASE WHEN isfinite(t) THEN (to_json(t AT TIME ZONE 'UTC') #>> '{}') || 'Z' END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION leases_event()
 RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    who text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        who := 'worker:' || NEW.worker;
        PERFORM set_config('workgraph.actor', who, true);
        INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
        VALUES (NEW.project_id, 'lease.granted', NEW.acquired_at, who, NEW.item_id, NEW.id,
                jsonb_build_object('lease_id', NEW.id, 'item_id', NEW.item_id, 'epoch', NEW.epoch,
                                   'worker', NEW.worker, 'expires_at', wg_json_time(NEW.expires_at)));
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION attention_event()
 RETURNS trigger LANGUAGE plpgsql AS $$
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
                'decision', NEW.decision, 'due_at', wg_json_time(NEW.due_at),
                'default_answer', CASE WHEN NEW.answered_by_default THEN true END)));
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_event_state()
 RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('workgraph.item_events', true) IS DISTINCT FROM 'on' THEN
        WITH c AS (
            SELECT n.project_id, n.id, n.seq, n.epoch,
                   coalesce(n.active_lease_id, o.active_lease_id) AS lease_id,
                   items_state(o.status, o.active_lease_id, o.open_attention, o.unmet_dependencies,
                               o.open_children, o.not_before, o.updated_at) AS from_state,
                   items_state(n.status, n.active_lease_id, n.open_attention, n.unmet_dependencies,
                               n.open_children, n.not_before, n.updated_at) AS to_state,
                   CASE WHEN n.updated_at > o.updated_at THEN n.updated_at END AS stamp,
                   n.not_before, n.updated_at
            FROM new_items n
            JOIN old_items o ON o.project_id = n.project_id AND o.id = n.id
        )
        INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
        SELECT c.project_id, 'item.state_changed', coalesce(c.stamp, clock_timestamp()), events_actor(),
               c.id, c.lease_id,
               jsonb_strip_nulls(jsonb_build_object(
                   'from', c.from_state, 'to', c.to_state, 'epoch', c.epoch,
                   'retry_after', CASE WHEN c.to_state = 'blocked' AND c.not_before > c.updated_at
                                       THEN wg_json_time(c.not_before) END))
        FROM c
        WHERE c.from_state IS DISTINCT FROM c.to_state
        ORDER BY c.seq;
        IF FOUND THEN
            PERFORM set_config('workgraph.item_events', 'on', true);
        END IF;
        RETURN NULL;
    END IF;
    -- A statement trigger runs for every UPDATE of items, also for one
    -- that changed no item's state (a completion's ReleaseDependents of an
    -- item with no dependents): the rewrite's statement only for changes.
    IF NOT EXISTS (SELECT 1 FROM new_items n
                   JOIN old_items o ON o.project_id = n.project_id AND o.id = n.id
                   WHERE items_state(o.status, o.active_lease_id, o.open_attention, o.unmet_dependencies,
                                     o.open_children, o.not_before, o.updated_at)
                         IS DISTINCT FROM
                         items_state(n.status, n.active_lease_id, n.open_attention, n.unmet_dependencies,
                                     n.open_children, n.not_before, n.updated_at)) THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('workgraph.events_rewrite', 'on', true);
    WITH c AS (
        SELECT n.project_id, n.id, n.seq, n.epoch, n.active_lease_id,
               coalesce(n.active_lease_id, o.active_lease_id) AS lease_id,
               items_state(o.status, o.active_lease_id, o.open_attention, o.unmet_dependencies,
                           o.open_children, o.not_before, o.updated_at) AS from_state,
               items_state(n.status, n.active_lease_id, n.open_attention, n.unmet_dependencies,
                           n.open_children, n.not_before, n.updated_at) AS to_state,
               CASE WHEN n.updated_at > o.updated_at THEN n.updated_at END AS stamp,
               n.not_before, n.updated_at
        FROM new_items n
        JOIN old_items o ON o.project_id = n.project_id AND o.id = n.id
    ), changed AS (
        SELECT c.*, CASE WHEN c.to_state = 'blocked' AND c.not_before > c.updated_at
                         THEN wg_json_time(c.not_before) END AS retry_after
        FROM c
        WHERE c.from_state IS DISTINCT FROM c.to_state
    ), mine AS (
        -- Each item's own latest item event, by index (events_by_item).
        SELECT m.*
        FROM changed ch
        CROSS JOIN LATERAL (
            SELECT e.project_id, e.seq, e.type, e.lease_id, e.payload, e.item_id
            FROM events e
            WHERE e.project_id = ch.project_id AND e.item_id = ch.id
              AND e.xid = pg_current_xact_id() AND e.type IN ('item.created', 'item.state_changed')
            ORDER BY e.seq DESC
            LIMIT 1) m
    ), created AS (
        UPDATE events e
        SET payload = jsonb_set(m.payload, '{state}', to_jsonb(ch.to_state))
        FROM mine m
        JOIN changed ch ON ch.id = m.item_id
        WHERE m.type = 'item.created' AND e.project_id = m.project_id AND e.seq = m.seq
    ), back AS (
        DELETE FROM events e
        USING mine m
        JOIN changed ch ON ch.id = m.item_id
        WHERE m.type = 'item.state_changed' AND m.payload->>'from' = ch.to_state
          AND e.project_id = m.project_id AND e.seq = m.seq
    ), moved AS (
        UPDATE events e
        SET at = coalesce(ch.stamp, clock_timestamp()),
            lease_id = coalesce(ch.active_lease_id, m.lease_id),
            payload = jsonb_strip_nulls(m.payload || jsonb_build_object(
                'to', ch.to_state, 'epoch', ch.epoch, 'retry_after', ch.retry_after))
        FROM mine m
        JOIN changed ch ON ch.id = m.item_id
        WHERE m.type = 'item.state_changed' AND (m.payload->>'from' = ch.to_state) IS NOT TRUE
          AND e.project_id = m.project_id AND e.seq = m.seq
    )
    INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
    SELECT ch.project_id, 'item.state_changed', coalesce(ch.stamp, clock_timestamp()), events_actor(),
           ch.id, ch.lease_id,
           jsonb_strip_nulls(jsonb_build_object('from', ch.from_state, 'to', ch.to_state,
                                                'epoch', ch.epoch, 'retry_after', ch.retry_after))
    FROM changed ch
    WHERE NOT EXISTS (SELECT 1 FROM mine m WHERE m.item_id = ch.id)
    ORDER BY ch.seq;
    PERFORM set_config('workgraph.events_rewrite', 'off', true);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd


-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION leases_event()
 RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION attention_event()
 RETURNS trigger LANGUAGE plpgsql AS $$
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION items_event_state()
 RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('workgraph.item_events', true) IS DISTINCT FROM 'on' THEN
        WITH c AS (
            SELECT n.project_id, n.id, n.seq, n.epoch,
                   coalesce(n.active_lease_id, o.active_lease_id) AS lease_id,
                   items_state(o.status, o.active_lease_id, o.open_attention, o.unmet_dependencies,
                               o.open_children, o.not_before, o.updated_at) AS from_state,
                   items_state(n.status, n.active_lease_id, n.open_attention, n.unmet_dependencies,
                               n.open_children, n.not_before, n.updated_at) AS to_state,
                   CASE WHEN n.updated_at > o.updated_at THEN n.updated_at END AS stamp,
                   n.not_before, n.updated_at
            FROM new_items n
            JOIN old_items o ON o.project_id = n.project_id AND o.id = n.id
        )
        INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
        SELECT c.project_id, 'item.state_changed', coalesce(c.stamp, clock_timestamp()), events_actor(),
               c.id, c.lease_id,
               jsonb_strip_nulls(jsonb_build_object(
                   'from', c.from_state, 'to', c.to_state, 'epoch', c.epoch,
                   'retry_after', CASE WHEN c.to_state = 'blocked' AND c.not_before > c.updated_at
                                       THEN c.not_before END))
        FROM c
        WHERE c.from_state IS DISTINCT FROM c.to_state
        ORDER BY c.seq;
        IF FOUND THEN
            PERFORM set_config('workgraph.item_events', 'on', true);
        END IF;
        RETURN NULL;
    END IF;
    -- A statement trigger runs for every UPDATE of items, also for one
    -- that changed no item's state (a completion's ReleaseDependents of an
    -- item with no dependents): the rewrite's statement only for changes.
    IF NOT EXISTS (SELECT 1 FROM new_items n
                   JOIN old_items o ON o.project_id = n.project_id AND o.id = n.id
                   WHERE items_state(o.status, o.active_lease_id, o.open_attention, o.unmet_dependencies,
                                     o.open_children, o.not_before, o.updated_at)
                         IS DISTINCT FROM
                         items_state(n.status, n.active_lease_id, n.open_attention, n.unmet_dependencies,
                                     n.open_children, n.not_before, n.updated_at)) THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('workgraph.events_rewrite', 'on', true);
    WITH c AS (
        SELECT n.project_id, n.id, n.seq, n.epoch, n.active_lease_id,
               coalesce(n.active_lease_id, o.active_lease_id) AS lease_id,
               items_state(o.status, o.active_lease_id, o.open_attention, o.unmet_dependencies,
                           o.open_children, o.not_before, o.updated_at) AS from_state,
               items_state(n.status, n.active_lease_id, n.open_attention, n.unmet_dependencies,
                           n.open_children, n.not_before, n.updated_at) AS to_state,
               CASE WHEN n.updated_at > o.updated_at THEN n.updated_at END AS stamp,
               n.not_before, n.updated_at
        FROM new_items n
        JOIN old_items o ON o.project_id = n.project_id AND o.id = n.id
    ), changed AS (
        SELECT c.*, CASE WHEN c.to_state = 'blocked' AND c.not_before > c.updated_at
                         THEN c.not_before END AS retry_after
        FROM c
        WHERE c.from_state IS DISTINCT FROM c.to_state
    ), mine AS (
        -- Each item's own latest item event, by index (events_by_item).
        SELECT m.*
        FROM changed ch
        CROSS JOIN LATERAL (
            SELECT e.project_id, e.seq, e.type, e.lease_id, e.payload, e.item_id
            FROM events e
            WHERE e.project_id = ch.project_id AND e.item_id = ch.id
              AND e.xid = pg_current_xact_id() AND e.type IN ('item.created', 'item.state_changed')
            ORDER BY e.seq DESC
            LIMIT 1) m
    ), created AS (
        UPDATE events e
        SET payload = jsonb_set(m.payload, '{state}', to_jsonb(ch.to_state))
        FROM mine m
        JOIN changed ch ON ch.id = m.item_id
        WHERE m.type = 'item.created' AND e.project_id = m.project_id AND e.seq = m.seq
    ), back AS (
        DELETE FROM events e
        USING mine m
        JOIN changed ch ON ch.id = m.item_id
        WHERE m.type = 'item.state_changed' AND m.payload->>'from' = ch.to_state
          AND e.project_id = m.project_id AND e.seq = m.seq
    ), moved AS (
        UPDATE events e
        SET at = coalesce(ch.stamp, clock_timestamp()),
            lease_id = coalesce(ch.active_lease_id, m.lease_id),
            payload = jsonb_strip_nulls(m.payload || jsonb_build_object(
                'to', ch.to_state, 'epoch', ch.epoch, 'retry_after', ch.retry_after))
        FROM mine m
        JOIN changed ch ON ch.id = m.item_id
        WHERE m.type = 'item.state_changed' AND (m.payload->>'from' = ch.to_state) IS NOT TRUE
          AND e.project_id = m.project_id AND e.seq = m.seq
    )
    INSERT INTO events (project_id, type, at, actor, item_id, lease_id, payload)
    SELECT ch.project_id, 'item.state_changed', coalesce(ch.stamp, clock_timestamp()), events_actor(),
           ch.id, ch.lease_id,
           jsonb_strip_nulls(jsonb_build_object('from', ch.from_state, 'to', ch.to_state,
                                                'epoch', ch.epoch, 'retry_after', ch.retry_after))
    FROM changed ch
    WHERE NOT EXISTS (SELECT 1 FROM mine m WHERE m.item_id = ch.id)
    ORDER BY ch.seq;
    PERFORM set_config('workgraph.events_rewrite', 'off', true);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

DROP FUNCTION wg_json_time(timestamptz);
