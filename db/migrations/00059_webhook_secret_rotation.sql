-- A webhook's signing secret can be rotated without losing the webhook,
-- its history or its pending deliveries: the new secret signs every
-- delivery at once, and the previous one signs beside it (a second
-- "v1,..." in webhook-signature, as the Standard Webhooks specification
-- allows) until previous_secret_until, so that a receiver can switch keys
-- without refusing a delivery.
-- +goose Up
ALTER TABLE webhooks
    ADD COLUMN previous_secret       text,
    ADD COLUMN previous_secret_until timestamptz,
    ADD CONSTRAINT webhooks_previous_secret_until CHECK ((previous_secret IS NULL) = (previous_secret_until IS NULL));

-- +goose Down
ALTER TABLE webhooks
    DROP CONSTRAINT webhooks_previous_secret_until,
    DROP COLUMN previous_secret_until,
    DROP COLUMN previous_secret;
