-- +goose NO TRANSACTION
-- +goose Up
-- items_labels, the GIN index of item labels that the lists filtered by a
-- label read (db/queries/graph.sql), holds the items that carry labels
-- only. It held every item: an empty array is indexed too (GIN keeps an
-- "empty" entry for it), so each update of an item that is not HOT (a
-- claim and a completion are not: they change indexed columns) inserted
-- into it, labels or none: two GIN records and about 340 bytes of WAL a
-- claim and completion of an item without labels, 5% of the lifecycle's
-- WAL (pg_walinspect over 2,000 lifecycles; docs/benchmarks-record.md,
-- "Where a lifecycle's WAL goes"). A list filtered by a label names
-- labels <> '{}' beside labels @> ARRAY[label], which the partial index's
-- predicate needs to be chosen (a label asked for is never empty, so the
-- answers are the same).
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_labels_next ON items USING gin (labels)
    WHERE labels <> '{}';
DROP INDEX CONCURRENTLY IF EXISTS items_labels;
ALTER INDEX items_labels_next RENAME TO items_labels;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS items_labels_prev ON items USING gin (labels);
DROP INDEX CONCURRENTLY IF EXISTS items_labels;
ALTER INDEX items_labels_prev RENAME TO items_labels;
