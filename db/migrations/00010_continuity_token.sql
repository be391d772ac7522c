-- +goose Up
-- The continuity reservation names the token that held the lease as well as
-- its worker label: the label is self-declared, and another agent token of
-- the project presenting it must not receive the reserved item (and the
-- person's answer with it). NULL is a lease granted without a token.
ALTER TABLE items ADD COLUMN preferred_token uuid;
-- Reservations already pending or running keep their worker: they belong
-- to the token of the item's latest lease (the one that ended for the
-- request).
UPDATE items i
SET preferred_token = l.token_id
FROM leases l
WHERE i.preferred_worker IS NOT NULL AND i.active_lease_id IS NULL
  AND l.project_id = i.project_id AND l.item_id = i.id AND l.epoch = i.epoch;

-- +goose Down
ALTER TABLE items DROP COLUMN preferred_token;
