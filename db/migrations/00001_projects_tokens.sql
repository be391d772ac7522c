-- +goose Up
-- Projects are the unit of tenancy. Every other table carries project_id and
-- every transaction stays inside one project, so the data can be distributed
-- by project_id (Citus) later; projects and tokens would become reference
-- tables there.
CREATE TABLE projects (
    id         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    name       text        NOT NULL UNIQUE
        CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- API tokens. The secret is shown once at creation and stored only as a
-- SHA-256 hash. Admin tokens may belong to no project; every other token
-- belongs to exactly one.
CREATE TABLE tokens (
    id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    project_id  uuid        REFERENCES projects (id),
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    role        text        NOT NULL CHECK (role IN ('admin', 'human', 'agent')),
    secret_hash bytea       NOT NULL CHECK (length(secret_hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz,
    CHECK (role = 'admin' OR project_id IS NOT NULL)
);
CREATE INDEX tokens_project ON tokens (project_id, created_at);

-- +goose Down
DROP TABLE tokens;
DROP TABLE projects;
