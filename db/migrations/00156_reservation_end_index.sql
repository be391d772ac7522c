-- +goose NO TRANSACTION
-- +goose Up
-- The ready items with a continuity reservation window, by the instant it
-- ends: a waiting claim's notifier reads the next such instant after a
-- floor (NextDueItems) in one index probe, as items_backoff (00141) gives
-- the next end of a retry backoff, and wakes a waiter at that instant.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_reservation_end ON items (project_id, preferred_until)
    WHERE ready AND preferred_until IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS items_reservation_end;
