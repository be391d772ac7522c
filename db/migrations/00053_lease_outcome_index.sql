-- +goose NO TRANSACTION
-- +goose Up
-- Lease history filtered by an outcome other than completed reads an index
-- of those leases instead of walking the project's history in order
-- (docs/operations.md, "Retention and partitioning of lease history").
--
-- GET /leases?outcome=failed (the history page's filter, `workgraph
-- leases ls --outcome`) walked leases_history, the project's leases in
-- grant order, testing each one's outcome: flat when the outcome is common,
-- but a rare one (cancelled, decomposed, attention_requested; a few
-- failures among a million completions) read the whole history for a page,
-- about 0.1 s at 1,000,000 ended leases. The index keys the project, the
-- outcome and the grant order, so such a page reads its own rows, in
-- either order. It holds only leases that ended otherwise than completed:
-- a claim (no outcome yet) and a completion (the common end) write no
-- entry in it, so the lease steps of the hot path do not pay for it; the
-- completed outcome, the common one, is found by the walk in order as
-- before. The statements are planned for their outcome (a generic plan
-- cannot choose a partial index for an unknown one): lease.Service.History.
-- CONCURRENTLY, as in 00008: building it does not block lease writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS leases_rare_outcomes ON leases (project_id, outcome, seq)
    WHERE outcome IS NOT NULL AND outcome <> 'completed';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS leases_rare_outcomes;
