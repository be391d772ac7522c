-- +goose Up
-- The batch statements of the lease protocol (ClaimItems, CompleteLeases)
-- write their leases' events and outcome counters themselves, one
-- INSERT ... SELECT per statement, instead of one row trigger call per
-- lease (docs/adr/0007-lean-hot-path.md, "Addendum: the batch path's lease
-- events by statement").
--
-- A row trigger of leases writes each lease's event with a PL/pgSQL call
-- and an INSERT run on its own (executor start and end, the checks of
-- events): in a batch of 100 that is 200 trigger calls per claim and
-- completion, about a fifth of the two statements' time. The events, their
-- content, their numbers' order (a statement's lease events before its
-- item events, which its item trigger writes at the statement's end), the
-- actor its item events read (workgraph.actor) and the counters are the
-- same; only who writes them changes, for those two statements.
--
-- How a statement takes the writing over: before each lease row it
-- writes, it sets the transaction-local setting workgraph.lease_events to
-- 'statement'; the row triggers' WHEN clauses skip a row written while it
-- is set; the statement's own CTEs write the events and counters of every
-- row it wrote; and a statement trigger of leases clears the setting at
-- the end of every statement that inserts leases or sets ended_at (its
-- WHEN clause spares the others a PL/pgSQL call). So the setting never
-- outlives the statement that set it: a later statement of the same
-- transaction (a single claim after a batch) fires the row triggers as
-- before. A statement that fails takes its setting with it (a local
-- setting is undone with the (sub)transaction).
--
-- wg_json_time is no longer STRICT: a STRICT SQL function whose body is not
-- strict is never inlined, so every lease.granted event called it as a
-- function of its own (one SQL function executor per call, about a tenth
-- of a millisecond). Its body answers NULL for NULL, as STRICT did.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_json_time(t timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN isfinite(t) THEN (to_json(t AT TIME ZONE 'UTC') #>> '{}') || 'Z' END
$$;
-- +goose StatementEnd

DROP TRIGGER leases_event_granted ON leases;
CREATE TRIGGER leases_event_granted BEFORE INSERT ON leases
    FOR EACH ROW WHEN (current_setting('workgraph.lease_events', true) IS DISTINCT FROM 'statement')
    EXECUTE FUNCTION leases_event();

DROP TRIGGER leases_event_ended ON leases;
CREATE TRIGGER leases_event_ended BEFORE UPDATE ON leases
    FOR EACH ROW WHEN (OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL
                       AND current_setting('workgraph.lease_events', true) IS DISTINCT FROM 'statement')
    EXECUTE FUNCTION leases_event();

DROP TRIGGER leases_count_ended ON leases;
CREATE TRIGGER leases_count_ended AFTER UPDATE OF ended_at ON leases
    FOR EACH ROW WHEN (OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL
                       AND current_setting('workgraph.lease_events', true) IS DISTINCT FROM 'statement')
    EXECUTE FUNCTION count_ended_lease();

-- +goose StatementBegin
CREATE FUNCTION wg_lease_events_written() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('workgraph.lease_events', '', true);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER leases_events_written AFTER INSERT OR UPDATE OF ended_at ON leases
    FOR EACH STATEMENT WHEN (current_setting('workgraph.lease_events', true) = 'statement')
    EXECUTE FUNCTION wg_lease_events_written();

-- +goose Down
DROP TRIGGER leases_events_written ON leases;
DROP FUNCTION wg_lease_events_written();

DROP TRIGGER leases_count_ended ON leases;
CREATE TRIGGER leases_count_ended AFTER UPDATE OF ended_at ON leases
    FOR EACH ROW WHEN (OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL)
    EXECUTE FUNCTION count_ended_lease();

DROP TRIGGER leases_event_ended ON leases;
CREATE TRIGGER leases_event_ended BEFORE UPDATE ON leases
    FOR EACH ROW WHEN (OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL)
    EXECUTE FUNCTION leases_event();

DROP TRIGGER leases_event_granted ON leases;
CREATE TRIGGER leases_event_granted BEFORE INSERT ON leases
    FOR EACH ROW EXECUTE FUNCTION leases_event();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_json_time(t timestamptz) RETURNS text
LANGUAGE sql STABLE STRICT AS $$
    SELECT CASE WHEN isfinite(t) THEN (to_json(t AT TIME ZONE 'UTC') #>> '{}') || 'Z' END
$$;
-- +goose StatementEnd
