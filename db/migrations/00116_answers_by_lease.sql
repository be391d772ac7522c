-- +goose NO TRANSACTION
-- +goose Up
-- A heartbeat hands the worker the newest answered (or dismissed)
-- non-blocking questions of its lease, at most attention.AnswersPerHeartbeat
-- of them (ClosedNonBlockingForLease). This index has them in order, so a
-- heartbeat reads those rows only, however many questions the lease asked
-- and had answered (a looping agent whose questions the deadline sweeper
-- answers with their default answer: migration 00114 bounds the open ones,
-- not the answered ones). CONCURRENTLY, as in 00008.
CREATE INDEX CONCURRENTLY IF NOT EXISTS attention_answers_by_lease
    ON attention_requests (project_id, lease_id, seq)
    WHERE lease_id IS NOT NULL AND NOT blocking AND state <> 'open';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS attention_answers_by_lease;
