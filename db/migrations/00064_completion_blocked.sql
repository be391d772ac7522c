-- A worker cannot complete an item that gained unfinished work while it
-- held the lease: a person added a dependency on an open item, or an open
-- child (graph.AddDependency, CreateItem under it, a plan import). Both
-- raise the item's counters (unmet_dependencies, open_children) in a
-- transaction that holds the item's row, so the completion's UPDATE of the
-- item (EndLease's "freed" step) either waits for it and, under READ
-- COMMITTED, computes its new values from the newest row version, or runs
-- first and the addition then finds the item done (which it refuses).
-- EndLease calls item_finishable in the SET of its completion, so the
-- check reads that newest version: it raises WG007 when the item waits for
-- a dependency or a child, which aborts the statement (the lease stays
-- live, nothing changes) and is answered as blocked
-- (lease.Service.Complete). The batch completion (CompleteLeases) filters
-- such items out instead, so that a blocked entry refuses only itself.
-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION item_finishable(unmet_dependencies integer, open_children integer) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF unmet_dependencies > 0 OR open_children > 0 THEN
        RAISE EXCEPTION 'the item waits for % unfinished dependencies and % open children',
            unmet_dependencies, open_children
            USING ERRCODE = 'WG007';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS item_finishable(integer, integer);
