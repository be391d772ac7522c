-- +goose NO TRANSACTION
-- +goose Up
-- The inbox shows a project's overdue open requests first, on every load
-- and live refresh (ListInboxOverdueAttention). Without this index that
-- part walked all of the project's open requests (attention_open) to find
-- the few the deadline sweeper marked overdue: 373 pages for 3 overdue
-- among 20,000 open requests (TestInboxOverduePartReadsFewPages).
-- CONCURRENTLY, as in 00008: no request waits for the build; a build
-- interrupted leaves an invalid index that the next attempt drops.
DROP INDEX CONCURRENTLY IF EXISTS attention_open_overdue;
CREATE INDEX CONCURRENTLY attention_open_overdue ON attention_requests (project_id, seq)
    WHERE state = 'open' AND overdue_at IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS attention_open_overdue;
