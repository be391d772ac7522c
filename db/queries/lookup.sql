-- Queries that resolve what a person typed (the first characters of an id)
-- to the project's objects.

-- name: LookupIDs :many
-- The project's objects of the asked kinds whose id lies in [@low, @high]:
-- an id prefix padded with 0s and with fs. A uuid compares as its 16 bytes,
-- in the order of its hex text, so each arm is a range scan of a primary
-- key (tokens: of theirs, filtered by project), at most @max_rows rows per
-- kind. Label names the object for a person: an item's title, a lease's
-- item title, an attention request's question, a token's name.
(SELECT 'item'::text AS kind, i.id, i.title AS label, i.created_at
 FROM items i
 WHERE i.project_id = @project_id AND 'item' = ANY(@kinds::text[])
   AND i.id BETWEEN @low::uuid AND @high::uuid
 ORDER BY i.id LIMIT @max_rows::integer)
UNION ALL
(SELECT 'lease'::text, l.id,
        coalesce((SELECT i.title FROM items i WHERE i.project_id = l.project_id AND i.id = l.item_id), '')::text,
        l.acquired_at
 FROM leases l
 WHERE l.project_id = @project_id AND 'lease' = ANY(@kinds::text[])
   AND l.id BETWEEN @low::uuid AND @high::uuid
 ORDER BY l.id LIMIT @max_rows::integer)
UNION ALL
(SELECT 'attention'::text, r.id, r.question, r.created_at
 FROM attention_requests r
 WHERE r.project_id = @project_id AND 'attention' = ANY(@kinds::text[])
   AND r.id BETWEEN @low::uuid AND @high::uuid
 ORDER BY r.id LIMIT @max_rows::integer)
UNION ALL
(SELECT 'token'::text, t.id, t.name, t.created_at
 FROM tokens t
 WHERE t.project_id = @project_id AND 'token' = ANY(@kinds::text[])
   AND t.id BETWEEN @low::uuid AND @high::uuid
 ORDER BY t.id LIMIT @max_rows::integer);
