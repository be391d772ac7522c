-- +goose Up
-- Usage, budgets and progress (issue 19). docs/architecture.md, "Budgets
-- and progress", says how the pieces hold together.
--
-- Usage a worker reports on its lease (heartbeat, completion): monotonic
-- per lease, each field the largest value reported (a lower one is
-- ignored), so the last report of a growing counter wins and a report that
-- arrives late changes nothing. Cost is kept in micro-dollars (integers:
-- sums are exact). progress_at is the last instant (database clock) the
-- lease's progress marker changed; NULL: never since the claim.
-- budget_roots lists the budgeted items whose subtree holds the lease's
-- item (the item's own budget_roots when the lease was granted, extended
-- when a budget is set on an ancestor while the lease lives).
ALTER TABLE leases
    ADD COLUMN tokens_in      bigint      NOT NULL DEFAULT 0,
    ADD COLUMN tokens_out     bigint      NOT NULL DEFAULT 0,
    ADD COLUMN cost_micro_usd bigint      NOT NULL DEFAULT 0,
    ADD COLUMN tool_calls     bigint      NOT NULL DEFAULT 0,
    ADD COLUMN progress_at    timestamptz,
    ADD COLUMN budget_roots   uuid[]      NOT NULL DEFAULT '{}';

-- The budgeted items whose subtree holds this item, itself included. A
-- child inherits its parent's (trigger below); setting a budget extends
-- every item of the subtree (lease.SetBudget).
ALTER TABLE items
    ADD COLUMN budget_roots uuid[] NOT NULL DEFAULT '{}';

-- How long a lease may heartbeat without its progress changing before it
-- is quiet (the workers page), and, when set, before the sweeper turns it
-- into a blocking attention request of reason no_progress.
ALTER TABLE projects
    ADD COLUMN quiet_after_ms       bigint NOT NULL DEFAULT 600000 CHECK (quiet_after_ms > 0),
    ADD COLUMN no_progress_after_ms bigint CHECK (no_progress_after_ms > 0);

-- A budget for an item's whole subtree, and its ledger: the usage of every
-- lease of every item of the subtree (leases granted before the budget was
-- set included), kept by the trigger on leases below, so a heartbeat never
-- walks the tree. A NULL limit is no limit; wall time runs from started_at
-- (when the budget was first set). request_id is the budget_exhausted
-- request opened when it was spent (NULL: none open for this spending).
CREATE TABLE budgets (
    project_id         uuid        NOT NULL,
    item_id            uuid        NOT NULL,
    max_tokens         bigint      CHECK (max_tokens >= 0),
    max_cost_micro_usd bigint      CHECK (max_cost_micro_usd >= 0),
    max_wall_ms        bigint      CHECK (max_wall_ms > 0),
    max_depth          integer     CHECK (max_depth >= 0),
    started_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    tokens_in          bigint      NOT NULL DEFAULT 0,
    tokens_out         bigint      NOT NULL DEFAULT 0,
    cost_micro_usd     bigint      NOT NULL DEFAULT 0,
    tool_calls         bigint      NOT NULL DEFAULT 0,
    request_id         uuid,
    PRIMARY KEY (project_id, item_id),
    FOREIGN KEY (project_id, item_id) REFERENCES items (project_id, id)
);

-- Whether a budget is spent at an instant: any limit reached.
CREATE FUNCTION budget_spent(b budgets, at timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT (b.max_tokens IS NOT NULL AND b.tokens_in + b.tokens_out >= b.max_tokens)
        OR (b.max_cost_micro_usd IS NOT NULL AND b.cost_micro_usd >= b.max_cost_micro_usd)
        OR (b.max_wall_ms IS NOT NULL AND b.started_at + b.max_wall_ms * interval '1 millisecond' <= at)
$$;

-- The ids of an item and its descendants (index items_by_parent).
CREATE FUNCTION item_subtree(project uuid, root uuid) RETURNS TABLE (id uuid)
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE sub(id) AS (
        SELECT root
        UNION ALL
        SELECT c.id FROM items c JOIN sub ON c.project_id = project AND c.parent_id = sub.id
    )
    SELECT sub.id FROM sub
$$;

-- Usage per worker label, for the workers page (the same trigger keeps
-- it), so the page does not sum the history.
CREATE TABLE worker_usage (
    project_id     uuid   NOT NULL,
    worker         text   NOT NULL,
    tokens_in      bigint NOT NULL DEFAULT 0,
    tokens_out     bigint NOT NULL DEFAULT 0,
    cost_micro_usd bigint NOT NULL DEFAULT 0,
    tool_calls     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, worker),
    FOREIGN KEY (project_id) REFERENCES projects (id)
);

-- Charges a lease's new usage (NEW - OLD, exact: the row trigger sees both
-- versions) to its worker and to every budget over its item. The WHEN
-- clause keeps it from running at all for a heartbeat that reports no new
-- usage.
-- +goose StatementBegin
CREATE FUNCTION charge_lease_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d_in   bigint := NEW.tokens_in - OLD.tokens_in;
    d_out  bigint := NEW.tokens_out - OLD.tokens_out;
    d_cost bigint := NEW.cost_micro_usd - OLD.cost_micro_usd;
    d_calls bigint := NEW.tool_calls - OLD.tool_calls;
BEGIN
    INSERT INTO worker_usage AS w (project_id, worker, tokens_in, tokens_out, cost_micro_usd, tool_calls)
    VALUES (NEW.project_id, NEW.worker, d_in, d_out, d_cost, d_calls)
    ON CONFLICT (project_id, worker) DO UPDATE
    SET tokens_in = w.tokens_in + EXCLUDED.tokens_in,
        tokens_out = w.tokens_out + EXCLUDED.tokens_out,
        cost_micro_usd = w.cost_micro_usd + EXCLUDED.cost_micro_usd,
        tool_calls = w.tool_calls + EXCLUDED.tool_calls;
    IF NEW.budget_roots <> '{}' THEN
        UPDATE budgets b
        SET tokens_in = b.tokens_in + d_in,
            tokens_out = b.tokens_out + d_out,
            cost_micro_usd = b.cost_micro_usd + d_cost,
            tool_calls = b.tool_calls + d_calls
        WHERE b.project_id = NEW.project_id AND b.item_id = ANY (NEW.budget_roots);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER leases_charge_usage AFTER UPDATE OF tokens_in, tokens_out, cost_micro_usd, tool_calls ON leases
    FOR EACH ROW
    WHEN (NEW.tokens_in <> OLD.tokens_in OR NEW.tokens_out <> OLD.tokens_out
          OR NEW.cost_micro_usd <> OLD.cost_micro_usd OR NEW.tool_calls <> OLD.tool_calls)
    EXECUTE FUNCTION charge_lease_usage();

-- A new child is under its parent's budgets. Only items created with a
-- parent pay for the lookup (the parent's row, by primary key).
-- +goose StatementBegin
CREATE FUNCTION items_inherit_budgets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.budget_roots := coalesce((SELECT p.budget_roots FROM items p
                                  WHERE p.project_id = NEW.project_id AND p.id = NEW.parent_id), '{}');
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER items_inherit_budgets BEFORE INSERT ON items
    FOR EACH ROW WHEN (NEW.parent_id IS NOT NULL)
    EXECUTE FUNCTION items_inherit_budgets();

-- The reasons of system requests: budget_exhausted (a subtree's budget is
-- spent: raise it or cancel) and no_progress (a lease heartbeated without
-- its progress changing for the project's no_progress_after).
ALTER TABLE attention_requests
    DROP CONSTRAINT attention_requests_reason_check,
    ADD CONSTRAINT attention_requests_reason_check
        CHECK (reason IN ('question', 'repeated_expiry', 'repeated_failure', 'hold', 'uncertain_outcome',
                          'budget_exhausted', 'no_progress'));

-- +goose Down
ALTER TABLE attention_requests
    DROP CONSTRAINT attention_requests_reason_check,
    ADD CONSTRAINT attention_requests_reason_check
        CHECK (reason IN ('question', 'repeated_expiry', 'repeated_failure', 'hold', 'uncertain_outcome'));
DROP TRIGGER items_inherit_budgets ON items;
DROP FUNCTION items_inherit_budgets();
DROP TRIGGER leases_charge_usage ON leases;
DROP FUNCTION charge_lease_usage();
DROP TABLE worker_usage;
DROP FUNCTION budget_spent(budgets, timestamptz);
DROP FUNCTION item_subtree(uuid, uuid);
DROP TABLE budgets;
ALTER TABLE projects DROP COLUMN quiet_after_ms, DROP COLUMN no_progress_after_ms;
ALTER TABLE items DROP COLUMN budget_roots;
ALTER TABLE leases
    DROP COLUMN tokens_in, DROP COLUMN tokens_out, DROP COLUMN cost_micro_usd,
    DROP COLUMN tool_calls, DROP COLUMN progress_at, DROP COLUMN budget_roots;
