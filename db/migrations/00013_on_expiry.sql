-- +goose Up
-- What an expired lease means for its item (on_expiry):
--   retry      the item goes back to the queue (the behaviour before);
--   reconcile  the expired attempt may still be running or may have applied
--              its effect: the item waits for a person in a blocking system
--              attention request of reason uncertain_outcome, which the
--              person resolves with a decision: retry, done (with the
--              result) or cancel.
-- projects.on_expiry is the project's default; items.on_expiry overrides it
-- (NULL: the project's default).
ALTER TABLE projects
    ADD COLUMN on_expiry text NOT NULL DEFAULT 'retry' CHECK (on_expiry IN ('retry', 'reconcile'));
ALTER TABLE items
    ADD COLUMN on_expiry text CHECK (on_expiry IN ('retry', 'reconcile'));

-- The decision that resolved an uncertain_outcome request (NULL for every
-- other request), written once with the resolution.
ALTER TABLE attention_requests
    DROP CONSTRAINT attention_requests_reason_check,
    ADD CONSTRAINT attention_requests_reason_check
        CHECK (reason IN ('question', 'repeated_expiry', 'repeated_failure', 'hold', 'uncertain_outcome')),
    ADD COLUMN decision text CHECK (decision IN ('retry', 'done', 'cancel')),
    ADD CONSTRAINT attention_requests_decision_check2
        CHECK (decision IS NULL OR (reason = 'uncertain_outcome' AND state = 'resolved'));

-- +goose Down
ALTER TABLE attention_requests
    DROP CONSTRAINT attention_requests_decision_check2,
    DROP COLUMN decision;
ALTER TABLE attention_requests
    DROP CONSTRAINT attention_requests_reason_check,
    ADD CONSTRAINT attention_requests_reason_check
        CHECK (reason IN ('question', 'repeated_expiry', 'repeated_failure', 'hold'));
ALTER TABLE items DROP COLUMN on_expiry;
ALTER TABLE projects DROP COLUMN on_expiry;
