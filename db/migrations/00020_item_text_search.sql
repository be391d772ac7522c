-- +goose NO TRANSACTION
-- +goose Up
-- `items ls --text` (the API's ?q=, the board's search) finds items whose
-- title or body contains the text, case-insensitively (ILIKE '%text%').
-- Without an index that reads every item of the project; trigram GIN
-- indexes answer it from the index instead (a bitmap OR of the two), for
-- texts of 3 characters or more. pg_trgm ships with PostgreSQL (Debian's
-- postgresql package includes the contrib modules) and is a trusted
-- extension: the database's owner may create it without superuser.
-- CONCURRENTLY (and idempotent), as in 00008: upgrading a server with many
-- items does not block writes while the indexes build.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
DROP INDEX CONCURRENTLY IF EXISTS items_title_trgm;
CREATE INDEX CONCURRENTLY items_title_trgm ON items USING gin (title gin_trgm_ops);
DROP INDEX CONCURRENTLY IF EXISTS items_body_trgm;
CREATE INDEX CONCURRENTLY items_body_trgm ON items USING gin (body gin_trgm_ops);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS items_body_trgm;
DROP INDEX CONCURRENTLY IF EXISTS items_title_trgm;
