-- +goose NO TRANSACTION
-- +goose Up
-- A lease may have at most lease.MaxOpenQuestions open non-blocking
-- requests: InsertAttention counts them in the statement that inserts one.
-- Without this index the count read either all of the lease's requests
-- (attention_by_lease: a worker that asked thousands, answered since) or
-- all of its project's open ones (attention_open: a busy inbox), 511 pages
-- with 20,000 of each where this reads the few open questions of the lease
-- (TestAskBoundReadsOpenQuestionsOnly).
-- CONCURRENTLY, as in 00008: no request waits for the build; a build
-- interrupted leaves an invalid index that the next attempt drops.
DROP INDEX CONCURRENTLY IF EXISTS attention_open_questions_by_lease;
CREATE INDEX CONCURRENTLY attention_open_questions_by_lease ON attention_requests (project_id, lease_id)
    WHERE state = 'open' AND NOT blocking AND lease_id IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS attention_open_questions_by_lease;
