-- name: ClaimableItems :many
-- For each label set in @label_sets (a set is its labels joined by ","; ""
-- asks for none), up to @per_set items of the project that carry the set
-- and that a claim could take now: ready, past their retry backoff, not
-- held by a claim in flight (rows another transaction holds are skipped;
-- FOR KEY SHARE conflicts with a claim's FOR UPDATE), in claim order; with
-- the labels and, while the continuity window is open, the reserved
-- worker and token. A waiting claimer that was woken and got nothing reads
-- it for the label sets of the claimers that wait with it, to hand the
-- wake-up to one that can take an item.
SELECT s.label_set::text AS label_set, c.id, c.labels, c.reserved, c.preferred_worker, c.preferred_token
FROM unnest(@label_sets::text[]) AS s(label_set)
CROSS JOIN LATERAL (
    SELECT i.id, i.labels,
           (i.preferred_worker IS NOT NULL
            AND i.preferred_until > coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))::boolean AS reserved,
           coalesce(i.preferred_worker, '')::text AS preferred_worker,
           i.preferred_token
    FROM items i
    WHERE i.project_id = @project_id
      AND i.ready
      AND i.labels @> string_to_array(s.label_set, ',')
      AND (i.not_before IS NULL OR i.not_before <= coalesce(sqlc.narg('now')::timestamptz, statement_timestamp()))
    ORDER BY i.priority DESC, i.seq
    LIMIT @per_set
    FOR KEY SHARE OF i SKIP LOCKED
) AS c;
