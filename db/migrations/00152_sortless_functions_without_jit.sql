-- +goose Up
-- The functions that plan with enable_sort = off run with jit = off too
-- (db/jit_test.go). enable_sort = off makes the planner prefer index order
-- to a sort by charging a sort its penalty for a disabled step, about
-- 10^10; a query in such a function that must sort after all then has a
-- cost far past jit_above_cost (100,000 by default), and PostgreSQL
-- compiles it to machine code at every execution. A claim whose search
-- sorted that way took 1.7 to 6.7 s instead of milliseconds (found while
-- building 00141, whose sorting read runs in wg_claim_due with sorts
-- enabled). These functions answer in a few index reads; compiling never
-- pays off for them. A later migration that redefines one of them names
-- jit = off among its SET clauses (CREATE OR REPLACE keeps only those it
-- names); the test lists any that does not.
-- +goose StatementBegin
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
             WHERE p.pronamespace = current_schema()::regnamespace
               AND 'enable_sort=off' = ANY (p.proconfig)
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET jit = off', f);
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
             WHERE p.pronamespace = current_schema()::regnamespace
               AND 'jit=off' = ANY (p.proconfig)
    LOOP
        EXECUTE format('ALTER FUNCTION %s RESET jit', f);
    END LOOP;
END;
$$;
-- +goose StatementEnd
