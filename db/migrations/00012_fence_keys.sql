-- +goose Up
-- The deployment's fence signing key: one Ed25519 key pair (its 32-byte
-- seed) with which every replica signs the fence tokens of the leases it
-- grants, so a destination trusts one public key whichever replica
-- answered. The first server to start creates it (INSERT ... ON CONFLICT DO
-- NOTHING, then every replica reads the row that won).
--
-- The one table without a project: the key belongs to the deployment, and
-- the project is inside each token it signs. Anyone who can read this
-- table can sign tokens; it holds no other secret.
CREATE TABLE fence_keys (
    id         smallint PRIMARY KEY CHECK (id = 1),
    seed       bytea NOT NULL CHECK (length(seed) = 32),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE fence_keys;
