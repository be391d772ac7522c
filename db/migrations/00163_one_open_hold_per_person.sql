-- +goose NO TRANSACTION
-- +goose Up
-- A person has at most one open hold on an item (attention.Service.Hold
-- answers the open one again): the database refuses a second. A hold is
-- released by its person once; a second one would have to be found and
-- released too, and the Hold button (or POST .../attention) pressed twice
-- made one.
--
-- The holds made twice before this migration are merged first: of a
-- person's open holds on an item, all but the oldest are dismissed as the
-- system (each an attention.dismissed event, as any dismissal), and leave
-- the item's open_attention counter. The item stays held by the oldest, so
-- its state and readiness do not change.
-- CONCURRENTLY, as in 00008: no request waits for the build. A hold made
-- twice between the merge and the build (by a replica not yet upgraded)
-- fails the build and leaves an invalid index, which the next attempt
-- drops before merging again.
DROP INDEX CONCURRENTLY IF EXISTS attention_one_open_hold;
-- +goose StatementBegin
WITH extra AS (
    SELECT r.project_id, r.id
    FROM attention_requests r
    WHERE r.reason = 'hold' AND r.state = 'open'
      AND EXISTS (SELECT FROM attention_requests o
                  WHERE o.project_id = r.project_id AND o.item_id = r.item_id
                    AND o.requested_by = r.requested_by AND o.reason = 'hold'
                    AND o.state = 'open' AND o.seq < r.seq)
), closed AS (
    UPDATE attention_requests r
    SET state = 'dismissed',
        answer = 'The same person held the item already; this hold was merged into that one.',
        resolved_by = 'system',
        resolved_at = clock_timestamp()
    FROM extra
    WHERE r.project_id = extra.project_id AND r.id = extra.id AND r.state = 'open'
    RETURNING r.project_id, r.item_id, r.blocking
)
UPDATE items i
SET open_attention = i.open_attention - c.n,
    updated_at = now()
FROM (SELECT project_id, item_id, count(*) AS n FROM closed WHERE blocking GROUP BY 1, 2) AS c
WHERE i.project_id = c.project_id AND i.id = c.item_id;
-- +goose StatementEnd
CREATE UNIQUE INDEX CONCURRENTLY attention_one_open_hold ON attention_requests (project_id, item_id, requested_by)
    WHERE reason = 'hold' AND state = 'open';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS attention_one_open_hold;
