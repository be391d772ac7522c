-- +goose Up
-- A bound on the attempts in flight per webhook, and a breaker that backs
-- a failing receiver off as a whole (webhook/deliver.go, docs/operations.md,
-- "Webhooks"). One receiver that hangs while its events come fast used to
-- hold about rate x timeout attempt slots of a replica, and every other
-- webhook waited behind it.
--
-- consecutive_failures: the webhook's failed attempts since its last
-- success (its run of failures, which failing_since dates); paused_until:
-- no attempt of the webhook starts before it (NULL: none waits).
ALTER TABLE webhooks
    ADD COLUMN consecutive_failures int NOT NULL DEFAULT 0,
    ADD COLUMN paused_until timestamptz;

-- A webhook's due deliveries, oldest first: the claim and the search for
-- due work take a few of each webhook's, so a backlog of one webhook
-- that may not take more (at its bound, or paused) is never walked.
CREATE INDEX webhook_deliveries_webhook_due ON webhook_deliveries (project_id, webhook_id, next_attempt_at)
    WHERE state = 'pending';

-- The deliveries under an attempt's lock (live or passed, not yet
-- recorded): a webhook's attempts in flight are counted from them.
CREATE INDEX webhook_deliveries_locked ON webhook_deliveries (project_id, webhook_id)
    WHERE lock_token IS NOT NULL;

-- +goose Down
DROP INDEX webhook_deliveries_locked;
DROP INDEX webhook_deliveries_webhook_due;
ALTER TABLE webhooks DROP COLUMN paused_until, DROP COLUMN consecutive_failures;
