-- +goose Up
-- A completion sent as one pipelined batch (docs/adr/0007-lean-hot-path.md):
-- its ending statement, then the release of the item's dependents and
-- parent, in one implicit transaction. The release runs only when the
-- ending statement ended the lease, because a lost fence aborts the batch:
-- the ending statement calls lease_fence_held with the number of leases it
-- ended and @must, and the function raises WG003 when that number is zero
-- and the caller asked it to. The transactional callers pass must = false
-- and read zero rows as before.
-- +goose StatementBegin
CREATE FUNCTION lease_fence_held(ended bigint, must boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF ended = 0 AND must THEN
        RAISE EXCEPTION 'the lease fence does not hold' USING ERRCODE = 'WG003';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS lease_fence_held(bigint, boolean);
