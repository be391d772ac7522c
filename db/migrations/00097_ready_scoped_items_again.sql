-- +goose NO TRANSACTION
-- +goose Up
-- items_ready_scoped again (00040; dropped by 00049 as unread): a batch
-- claim that found fewer ready items than it asked for answers whether an
-- item with touches is ready (ClaimItems' scoped_ready, db/queries/
-- lease_batch.sql), and that question, asked since after 00049 was
-- written, found no index: PostgreSQL read the items table, every
-- project's rows, to answer it when none is (3,003 rows read and thrown
-- away for a batch of two in TestClaimByRareLabelReadsTheLabelIndex). The
-- index holds only ready items with touches, so an item without touches,
-- the common case, never writes an entry in it.
-- CONCURRENTLY, as in 00008.
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_ready_scoped ON items (project_id) WHERE ready AND touches <> '{}';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS items_ready_scoped;
