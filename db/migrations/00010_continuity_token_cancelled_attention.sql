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

-- A cancel now dismisses the open attention requests of the items it
-- cancels; requests a cancel left open before are dismissed here (by
-- "system"), and the blocking ones leave their items' open_attention.
WITH closed AS (
    UPDATE attention_requests r
    SET state = 'dismissed', answer = 'item cancelled', resolved_by = 'system', resolved_at = now()
    FROM items i
    WHERE i.project_id = r.project_id AND i.id = r.item_id
      AND i.status = 'cancelled' AND r.state = 'open'
    RETURNING r.project_id, r.item_id, r.blocking
)
UPDATE items i
SET open_attention = i.open_attention - c.n
FROM (SELECT project_id, item_id, count(*)::integer AS n
      FROM closed WHERE blocking
      GROUP BY project_id, item_id) AS c
WHERE i.project_id = c.project_id AND i.id = c.item_id;

-- +goose Down
-- The dismissals stay: closed requests are history.
ALTER TABLE items DROP COLUMN preferred_token;
