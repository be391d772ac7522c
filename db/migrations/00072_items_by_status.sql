-- +goose NO TRANSACTION
-- +goose Up
-- Item lists filtered by state (the board's columns, GET /items?state=,
-- the items page's state filter) read the project's items of the state's
-- status from this index (ListItems, ListItemsNewest, ListItemsSorted with
-- @status; graph.Service.ListItems): an open state (ready, leased, blocked,
-- attention) reads the open items, cancelled the cancelled ones, so the
-- cost follows the open work, not the history. Before, every state filter
-- walked the project's items in creation order and computed each one's
-- state: in a project of 100,000 items, 95,000 of them done, the board
-- took 1.6 s and a list of the ready items read every item.
--
-- Partial: done items, most of a project that has run for months, are
-- left out; a filter on done walks items_by_seq, where they are most rows.
-- What it costs a write: an open item's row version is indexed here as in
-- the table's other indexes, so an update that is not HOT (a claim, which
-- changes ready, the predicate of items_claim; a release; a counter that
-- frees or blocks the item) inserts one entry more; and an item's finish
-- or cancellation (once in its life) is no longer HOT when it could have
-- been (status is now indexed). Heartbeats write leases only. CONCURRENTLY, as in 00054: no write waits for the build;
-- a build interrupted leaves an invalid index that the next attempt drops.
DROP INDEX CONCURRENTLY IF EXISTS items_by_status;
CREATE INDEX CONCURRENTLY items_by_status ON items (project_id, status, seq) WHERE status <> 'done';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS items_by_status;
