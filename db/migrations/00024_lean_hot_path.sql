-- +goose Up
-- The lean hot path (docs/adr/0007-lean-hot-path.md): one index fewer to
-- write on every lease row version (a lifecycle writes three). An item's
-- leases are found by leases_project_id_item_id_epoch_key (project_id,
-- item_id, epoch), whose epoch order is the item's grant order, as seq's is.
DROP INDEX IF EXISTS leases_by_item;

-- +goose Down
CREATE INDEX IF NOT EXISTS leases_by_item ON leases (project_id, item_id, seq);
