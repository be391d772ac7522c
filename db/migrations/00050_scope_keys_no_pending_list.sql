-- +goose Up
-- The scope-key index without GIN's pending list (docs/benchmarks.md,
-- "Workload 14").
--
-- With fastupdate on (GIN's default), an insert into a GIN index appends
-- its keys to a pending list that is merged into the index only by a
-- vacuum or when the list outgrows gin_pending_list_limit (4 MB), and
-- every search reads the whole list besides the index. Every scoped claim
-- inserts a lease into leases_live_scope_keys, and every claim candidate
-- that touches something searches it (wg_scope_holder, once per scoped
-- candidate and once more under the grant's locks). In workload 14 the
-- list held 5,641 entries in 34 pages; each search read them all, about
-- 1.1 ms a call, and a scoped claim made four or five: most of the
-- scoped claim's extra cost. With fastupdate off an insert writes its
-- keys into the index at once (a few pages), and a search reads only the
-- pages of the keys it asks for (0.14 ms a call in the same workload).
--
-- Setting the option does not move what the list already holds; the
-- cleanup does (it is what a vacuum would do). The option takes a SHARE
-- UPDATE EXCLUSIVE lock, which claims and completions do not conflict
-- with.
ALTER INDEX leases_live_scope_keys SET (fastupdate = off);
SELECT gin_clean_pending_list('leases_live_scope_keys'::regclass);

-- +goose Down
ALTER INDEX leases_live_scope_keys RESET (fastupdate);
