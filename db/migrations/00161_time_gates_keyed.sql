-- +goose NO TRANSACTION
-- +goose Up
-- The read of a project's next time gates (NextDueItems, lease/due.go)
-- pages by (instant, item id) instead of by instant alone
-- (docs/adr/0007-lean-hot-path.md, "Addendum: claims past retry
-- backoffs"). It reads at most 32 items a side; when more came out of
-- their backoff (or their reservation window) at one instant, the read
-- after the first 32 asked for instants strictly later and skipped the
-- rest, and their waiting claims waited for the periodic recheck. The
-- floor is now the last item turned into an event, so the next read
-- starts right after it, at the same instant. Both indexes take the id as
-- their last column so that the floor is a range of each, read from its
-- front; the claims' reads of the due items (the front of items_backoff)
-- are unchanged.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_backoff_keyed ON items (project_id, not_before, id)
    WHERE ready AND in_backoff;
DROP INDEX CONCURRENTLY IF EXISTS items_backoff;
ALTER INDEX items_backoff_keyed RENAME TO items_backoff;
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_reservation_end_keyed ON items (project_id, preferred_until, id)
    WHERE ready AND preferred_until IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS items_reservation_end;
ALTER INDEX items_reservation_end_keyed RENAME TO items_reservation_end;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_backoff_instant_only ON items (project_id, not_before)
    WHERE ready AND in_backoff;
DROP INDEX CONCURRENTLY IF EXISTS items_backoff;
ALTER INDEX items_backoff_instant_only RENAME TO items_backoff;
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_reservation_end_instant_only ON items (project_id, preferred_until)
    WHERE ready AND preferred_until IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS items_reservation_end;
ALTER INDEX items_reservation_end_instant_only RENAME TO items_reservation_end;
