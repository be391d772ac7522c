-- +goose Up
-- Plan keys: an item created by a plan import keeps the key the plan gave
-- it, unique in its project, so importing the same plan again finds the
-- items it made instead of creating them twice. Items made otherwise (and
-- every item from before this migration) have no key.
ALTER TABLE items ADD COLUMN plan_key text CHECK (length(plan_key) BETWEEN 1 AND 200);
CREATE UNIQUE INDEX items_plan_key ON items (project_id, plan_key) WHERE plan_key IS NOT NULL;

-- Token names are unique in their project, revoked tokens included: a
-- token's name is its principal in history (token:NAME), and history is
-- kept forever, so a name never stands for two tokens. Admin tokens of no
-- project (the bootstrap token) are outside this rule: they are not a
-- project's principals, and a changed WORKGRAPH_BOOTSTRAP_TOKEN adds a new
-- "bootstrap" beside the old one.
--
-- Existing duplicates: the oldest token keeps its name, every later one is
-- renamed NAME#ID8 (the first 8 characters of its id), which stays unique
-- and still says which name it had. History written before this migration
-- keeps the old principal string (it is append-only).
UPDATE tokens t
SET name = left(t.name, 191) || '#' || left(t.id::text, 8)
FROM (
    SELECT id, row_number() OVER (PARTITION BY project_id, name ORDER BY created_at, id) AS n
    FROM tokens WHERE project_id IS NOT NULL
) d
WHERE t.id = d.id AND d.n > 1;
CREATE UNIQUE INDEX tokens_name ON tokens (project_id, name) WHERE project_id IS NOT NULL;

-- +goose Down
DROP INDEX tokens_name;
DROP INDEX items_plan_key;
ALTER TABLE items DROP COLUMN plan_key;
