-- +goose Up
-- Work items. One recursive type: an epic is an item with children.
--
-- Readiness is maintained incrementally in counters that the writing
-- transactions keep exact (see docs/architecture.md):
--   unmet_dependencies  dependencies whose item is still open
--   open_children       direct children that are still open
--   open_attention      open blocking attention requests
--   active_lease_id     the lease that holds the item, if any
-- "ready" is derived from them in a stored generated column, and the claim
-- path reads the partial index items_claim, so finding the next item never
-- scans blocked or finished work. Time-dependent gates (retry backoff in
-- not_before, the continuity window in preferred_until) are checked by the
-- claim statement against the database clock.
CREATE TABLE items (
    project_id           uuid        NOT NULL REFERENCES projects (id),
    id                   uuid        NOT NULL DEFAULT gen_random_uuid(),
    seq                  bigint      NOT NULL GENERATED ALWAYS AS IDENTITY,
    parent_id            uuid,
    title                text        NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
    body                 text        NOT NULL DEFAULT '',
    priority             integer     NOT NULL DEFAULT 0,
    labels               text[]      NOT NULL DEFAULT '{}',
    metadata             jsonb       NOT NULL DEFAULT '{}',
    status               text        NOT NULL DEFAULT 'open'
        CHECK (status IN ('open', 'done', 'cancelled')),
    result               jsonb,
    -- The fencing token: incremented by every claim of this item.
    epoch                bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    -- Optimistic concurrency for edits by people.
    version              integer     NOT NULL DEFAULT 1,
    unmet_dependencies   integer     NOT NULL DEFAULT 0 CHECK (unmet_dependencies >= 0),
    open_children        integer     NOT NULL DEFAULT 0 CHECK (open_children >= 0),
    open_attention       integer     NOT NULL DEFAULT 0 CHECK (open_attention >= 0),
    active_lease_id      uuid,
    -- Retry backoff after a failure: not claimable before this instant.
    not_before           timestamptz,
    failures             integer     NOT NULL DEFAULT 0,
    consecutive_expiries integer     NOT NULL DEFAULT 0,
    -- Worker of the most recent ended lease.
    previous_worker      text,
    -- Continuity preference after an attention request is resolved: until
    -- preferred_until only preferred_worker may claim the item.
    preferred_worker     text,
    preferred_until      timestamptz,
    created_by           text        NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    finished_at          timestamptz,
    ready                boolean     NOT NULL GENERATED ALWAYS AS (
        status = 'open'
        AND unmet_dependencies = 0
        AND open_children = 0
        AND open_attention = 0
        AND active_lease_id IS NULL
    ) STORED,
    PRIMARY KEY (project_id, id),
    FOREIGN KEY (project_id, parent_id) REFERENCES items (project_id, id),
    CHECK (parent_id IS NULL OR parent_id <> id),
    CHECK ((status = 'open') = (finished_at IS NULL)),
    CHECK (status = 'open' OR active_lease_id IS NULL)
);

-- The claim index: highest priority first, ties first-created first.
CREATE INDEX items_claim ON items (project_id, priority DESC, seq) WHERE ready;
CREATE INDEX items_by_seq ON items (project_id, seq);
CREATE INDEX items_by_parent ON items (project_id, parent_id, seq) WHERE parent_id IS NOT NULL;
CREATE INDEX items_labels ON items USING gin (labels);

-- The derived state of an item, one definition for every query (listing
-- filters by it). now is the instant that decides the retry backoff
-- (not_before): the database clock or a test's stub. Precedence: a terminal
-- status, then an active lease, then open attention, then the blocking gates.
-- A continuity reservation (preferred_until) does not change the state: the
-- item is ready, for the preferred worker only.
-- +goose StatementBegin
CREATE FUNCTION item_state(status text, active_lease_id uuid, open_attention integer,
                           unmet_dependencies integer, open_children integer,
                           not_before timestamptz, now timestamptz)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN status <> 'open' THEN status
        WHEN active_lease_id IS NOT NULL THEN 'leased'
        WHEN open_attention > 0 THEN 'attention'
        WHEN unmet_dependencies > 0 OR open_children > 0
             OR (not_before IS NOT NULL AND not_before > now) THEN 'blocked'
        ELSE 'ready'
    END
$$;
-- +goose StatementEnd

-- "item_id depends on depends_on_id": item_id waits until depends_on_id is
-- finished. Together with parent/child edges (a parent waits for its
-- children) these form the waits-for graph, which is kept acyclic.
CREATE TABLE dependencies (
    project_id    uuid        NOT NULL,
    item_id       uuid        NOT NULL,
    depends_on_id uuid        NOT NULL,
    created_by    text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, item_id, depends_on_id),
    FOREIGN KEY (project_id, item_id) REFERENCES items (project_id, id),
    FOREIGN KEY (project_id, depends_on_id) REFERENCES items (project_id, id),
    CHECK (item_id <> depends_on_id)
);
CREATE INDEX dependencies_dependents ON dependencies (project_id, depends_on_id);

-- Wake long-polling claimers when an item becomes ready. The payload is the
-- project id; NOTIFY folds identical payloads within one transaction.
-- +goose StatementBegin
CREATE FUNCTION items_notify_ready() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('workgraph_ready', NEW.project_id::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER items_ready_insert AFTER INSERT ON items
    FOR EACH ROW WHEN (NEW.ready) EXECUTE FUNCTION items_notify_ready();
CREATE TRIGGER items_ready_update AFTER UPDATE ON items
    FOR EACH ROW WHEN (NEW.ready AND NOT OLD.ready) EXECUTE FUNCTION items_notify_ready();

-- +goose Down
DROP TABLE dependencies;
DROP TABLE items;
DROP FUNCTION items_notify_ready();
DROP FUNCTION item_state(text, uuid, integer, integer, integer, timestamptz, timestamptz);
