-- A replayed answer carries the ETag of the first one (an item's version,
-- for If-Match), as it carries its status and body.
-- +goose Up
ALTER TABLE idempotency_keys ADD COLUMN etag text;

-- +goose Down
ALTER TABLE idempotency_keys DROP COLUMN etag;
