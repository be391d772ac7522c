-- +goose NO TRANSACTION
-- +goose Up
-- Routes such as /v1/leases/{id} and /v1/attention/{id} name a lease or an
-- attention request by its id alone and first look up its project. The
-- primary keys lead with project_id, so without these indexes each such
-- lookup reads the whole (ever-growing) table. Not unique: uniqueness
-- stays with the primary keys, and a distributed PostgreSQL only enforces
-- unique indexes that include the distribution column (project_id).
-- CONCURRENTLY, so that upgrading a server with a long history does not
-- block writes while the index builds. A build that was interrupted leaves
-- an invalid index behind and the migration unrecorded; the next attempt
-- drops that index and builds it again.
DROP INDEX CONCURRENTLY IF EXISTS leases_by_id;
CREATE INDEX CONCURRENTLY leases_by_id ON leases (id);
DROP INDEX CONCURRENTLY IF EXISTS attention_requests_by_id;
CREATE INDEX CONCURRENTLY attention_requests_by_id ON attention_requests (id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS attention_requests_by_id;
DROP INDEX CONCURRENTLY IF EXISTS leases_by_id;
