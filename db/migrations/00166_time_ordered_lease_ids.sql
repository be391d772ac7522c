-- +goose Up
-- New leases take time-ordered ids. A lease id was a random UUID (version
-- 4), and the id is in two indexes of leases, a table that only grows:
-- leases_by_id (id) and leases_pkey (project_id, id). A random key puts
-- each insert on a random leaf page of those indexes, and once the history
-- is larger than the pages a checkpoint interval touches anyway, the first
-- change of a page after a checkpoint writes the whole page to the WAL
-- (full_page_writes): measured, a claim and release in a project of
-- 1,000,000 ended leases wrote 1.6 full pages and 15.6 KB of WAL, against
-- 0.8 and 10.6 KB in a project of 3,000 (docs/benchmarks-record.md,
-- "Time-ordered lease ids"). A UUID version 7 (RFC 9562) begins with the
-- Unix time in milliseconds, so new ids sort after old ones and each
-- insert lands on the right-hand page of both indexes, the one the last
-- grant touched. lease.newLeaseID makes them in Go (ClaimItemDirect,
-- ClaimItem, the scoped batch); wg_uuid_v7 here for the batch claim, whose
-- statement makes an id per granted row. Nothing reads the time back: the
-- id orders nothing and decides nothing (acquired_at and seq do), and an
-- id stays a UUID of the same type, so old and new ids live side by side.
-- +goose StatementBegin
CREATE FUNCTION wg_uuid_v7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    -- 12 hex digits of milliseconds, the version digit 7, then the random
    -- digits of a version 4 UUID from its 14th on (the variant digit at
    -- the 17th is already RFC 9562's).
    SELECT (lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
            || '7' || substr(replace(gen_random_uuid()::text, '-', ''), 14))::uuid
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION wg_uuid_v7();
