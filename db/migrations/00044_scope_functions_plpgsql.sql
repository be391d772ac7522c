-- +goose Up
-- The scope helpers of the claim, without a SQL function the server parses
-- and plans on every call (docs/benchmarks.md, "Workload 14").
--
-- A SQL-language function that the planner does not inline is run by
-- parsing and planning its body afresh in every statement that calls it
-- (its plan lives only as long as the calling statement's executor); so
-- is one that a plan folds to a constant, at every planning. The claim
-- calls them on every scoped candidate: wg_scope_holder's query called
-- wg_scope_probe, which called wg_scope_first (declared STRICT, so never
-- inlined: its CASE is not strict), and the lease's INSERT called
-- wg_scope_keys and wg_scope_resources. Their work is a few string
-- operations; parsing and planning them cost most of what a scoped claim
-- costs more than a plain one. Here:
--   * wg_scope_first drops STRICT, so the planner inlines it (a NULL scope
--     still gives NULL);
--   * wg_scope_keys, wg_scope_probe, wg_scope_resources and
--     wg_scopes_overlap are plpgsql loops over the array whose statements
--     are plain expressions (no query), so a call costs no planning;
--   * wg_scope_holder reads the probe into a variable before its query.
-- Same names, arguments and answers as before (sorted, distinct keys),
-- so replicas of the previous version keep working during a rolling
-- upgrade; graph/scope_test.go checks the rule and the keys, and
-- TestScopeHelpersArePlannedOnce that no helper is planned per call.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_first(x text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN strpos(x, ':') = 0
                  OR strpos(split_part(substr(x, strpos(x, ':') + 1), '/', 1), '*') > 0 THEN '*'
                ELSE split_part(substr(x, strpos(x, ':') + 1), '/', 1) END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_text_set_add: the sorted array of distinct texts a with v added (a
-- must be sorted and distinct; a NULL v is left out).
CREATE FUNCTION wg_text_set_add(a text[], v text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    i int := 1;
    n int := coalesce(cardinality(a), 0);
BEGIN
    IF v IS NULL OR v = ANY (a) THEN
        RETURN a;
    END IF;
    WHILE i <= n AND a[i] < v LOOP
        i := i + 1;
    END LOOP;
    RETURN a[1:i - 1] || v || a[i:n];
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_resources(s text[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    x text;
    out text[] := '{}';
BEGIN
    FOREACH x IN ARRAY s LOOP
        out := wg_text_set_add(out, split_part(x, ':', 1));
    END LOOP;
    RETURN out;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_keys(s text[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    x text;
    out text[] := '{}';
BEGIN
    FOREACH x IN ARRAY s LOOP
        out := wg_text_set_add(out, split_part(x, ':', 1));
        out := wg_text_set_add(out, split_part(x, ':', 1) || ':' || wg_scope_first(x));
    END LOOP;
    RETURN out;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_probe(s text[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    x text;
    first text;
    out text[] := '{}';
BEGIN
    FOREACH x IN ARRAY s LOOP
        first := wg_scope_first(x);
        IF first = '*' THEN
            out := wg_text_set_add(out, split_part(x, ':', 1));
        ELSE
            out := wg_text_set_add(out, split_part(x, ':', 1) || ':' || first);
            out := wg_text_set_add(out, split_part(x, ':', 1) || ':*');
        END IF;
    END LOOP;
    RETURN out;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_scopes_overlap: the rule of wg_scope_overlaps (migration 00032) on
-- every pair, written out here: that function is STRICT with a body that
-- is not, so it was never inlined either. A NULL scope overlaps nothing.
CREATE OR REPLACE FUNCTION wg_scopes_overlap(a text[], b text[]) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    x text;
    y text;
BEGIN
    FOREACH x IN ARRAY a LOOP
        CONTINUE WHEN x IS NULL;
        FOREACH y IN ARRAY b LOOP
            CONTINUE WHEN y IS NULL OR split_part(x, ':', 1) <> split_part(y, ':', 1);
            IF strpos(x, ':') = 0 OR strpos(y, ':') = 0
               OR wg_paths_overlap(string_to_array(substr(x, strpos(x, ':') + 1), '/'),
                                   string_to_array(substr(y, strpos(y, ':') + 1), '/')) THEN
                RETURN true;
            END IF;
        END LOOP;
    END LOOP;
    RETURN false;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_holder(p_project uuid, p_except uuid, p_scopes text[], p_at timestamptz)
RETURNS uuid LANGUAGE plpgsql STABLE AS $$
DECLARE
    probe text[] := wg_scope_probe(p_scopes);
BEGIN
    RETURN (SELECT h.id FROM leases h
            WHERE h.project_id = p_project
              AND h.ended_at IS NULL AND h.scope_keys <> '{}'
              AND h.scope_keys && probe
              AND h.expires_at > p_at
              AND h.id IS DISTINCT FROM p_except
              AND wg_scopes_overlap(h.scopes, p_scopes)
            LIMIT 1);
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_holder(p_project uuid, p_except uuid, p_scopes text[], p_at timestamptz)
RETURNS uuid LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT h.id FROM leases h
            WHERE h.project_id = p_project
              AND h.ended_at IS NULL AND h.scope_keys <> '{}'
              AND h.scope_keys && wg_scope_probe(p_scopes)
              AND h.expires_at > p_at
              AND h.id IS DISTINCT FROM p_except
              AND wg_scopes_overlap(h.scopes, p_scopes)
            LIMIT 1);
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scopes_overlap(a text[], b text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(a) AS x, unnest(b) AS y WHERE wg_scope_overlaps(x, y))
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_probe(s text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT k.k ORDER BY k.k), '{}')
    FROM unnest(s) AS x,
         LATERAL (SELECT split_part(x, ':', 1) AS res, wg_scope_first(x) AS first) AS p,
         LATERAL (VALUES (CASE WHEN p.first = '*' THEN p.res ELSE p.res || ':' || p.first END),
                         (CASE WHEN p.first = '*' THEN NULL ELSE p.res || ':*' END)) AS k(k)
    WHERE k.k IS NOT NULL
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_keys(s text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT k.k ORDER BY k.k), '{}')
    FROM unnest(s) AS x,
         LATERAL (VALUES (split_part(x, ':', 1)), (split_part(x, ':', 1) || ':' || wg_scope_first(x))) AS k(k)
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_resources(s text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT split_part(x, ':', 1) ORDER BY split_part(x, ':', 1)), '{}')
    FROM unnest(s) AS x
$$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS wg_text_set_add(text[], text);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scope_first(x text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN strpos(x, ':') = 0
                  OR strpos(split_part(substr(x, strpos(x, ':') + 1), '/', 1), '*') > 0 THEN '*'
                ELSE split_part(substr(x, strpos(x, ':') + 1), '/', 1) END
$$;
-- +goose StatementEnd
