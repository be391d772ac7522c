-- +goose Up
-- The deployment's fence key can be rotated (`workgraph fence rotate`): a
-- new key, the next id, signs from then on; the keys it replaces stay
-- published until their retire_at (the grace given), so the tokens they
-- signed for live leases still verify at destinations, then drop out of
-- the keys document. The signing key is the one of the largest id.
ALTER TABLE fence_keys DROP CONSTRAINT fence_keys_id_check;
ALTER TABLE fence_keys ADD CONSTRAINT fence_keys_id_positive CHECK (id >= 1);
ALTER TABLE fence_keys ADD COLUMN retire_at timestamptz;

-- +goose Down
-- Back to one key: the signing one.
DELETE FROM fence_keys WHERE id <> (SELECT max(id) FROM fence_keys);
UPDATE fence_keys SET id = 1;
ALTER TABLE fence_keys DROP COLUMN retire_at;
ALTER TABLE fence_keys DROP CONSTRAINT fence_keys_id_positive;
ALTER TABLE fence_keys ADD CONSTRAINT fence_keys_id_check CHECK (id = 1);
