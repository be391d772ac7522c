-- +goose Up
-- The lean hot path (docs/adr/0007-lean-hot-path.md): two indexes fewer to
-- write on every lease row version (a lifecycle writes three).
--
-- An item's leases are found by leases_project_id_item_id_epoch_key
-- (project_id, item_id, epoch), whose epoch order is the item's grant
-- order, as seq's is.
DROP INDEX IF EXISTS leases_by_item;
-- Expired leases are found through leases_active_expiry (project_id,
-- expires_at) WHERE ended_at IS NULL: per project by the claim's guard and
-- the reap, and across projects by the sweeper (a scan of the live leases
-- only). The global index let the planner answer a project's earliest
-- expiry by walking every project's live leases in expiry order.
DROP INDEX IF EXISTS leases_expiry;

-- +goose Down
CREATE INDEX IF NOT EXISTS leases_expiry ON leases (expires_at) WHERE ended_at IS NULL;
CREATE INDEX IF NOT EXISTS leases_by_item ON leases (project_id, item_id, seq);
