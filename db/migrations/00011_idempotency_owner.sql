-- +goose Up
-- An Idempotency-Key record still in progress (status IS NULL) belongs to
-- the server request running it: owner names that request, and
-- locked_until (the database's clock) is how long the record stays its own
-- without a renewal. The owner renews it while it runs, so a record whose
-- owner died (a killed replica, a lost database connection) is free for a
-- retry a few seconds later, on whichever replica the retry reaches.
--
-- effect_at is set by the owner's own write transaction, in that
-- transaction (and only while it still owns the record): a record whose
-- effect committed is never run again, even when its answer was lost; a
-- retry is told that the outcome is unknown instead. An owner whose record
-- was taken over finds no row to mark, and its transaction rolls back.
--
-- effect_ref names what the effect made, where the API knows how to show
-- it again (a claim: the id of the lease it granted), so that a retry of a
-- request whose answer was lost can still be answered.
--
-- Records in progress before this migration get locked_until = now(): they
-- are free for a retry at once.
ALTER TABLE idempotency_keys
    ADD COLUMN owner        uuid,
    ADD COLUMN locked_until timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN effect_at    timestamptz,
    ADD COLUMN effect_ref   text;

-- +goose Down
ALTER TABLE idempotency_keys
    DROP COLUMN effect_ref,
    DROP COLUMN effect_at,
    DROP COLUMN locked_until,
    DROP COLUMN owner;
