-- +goose Up
-- The overlap test of write scopes (wg_scopes_overlap) runs for every
-- ready item with touches that a claim walks past while a live lease holds
-- a scope that may overlap (wg_scope_holder): every scope of the item
-- against every scope of the lease, each pair a table of the two paths'
-- segments (wg_paths_overlap) with a function call per cell
-- (wg_segments_overlap). Measured on PostgreSQL 15: 28 ms to test two
-- items of 32 three-segment globs against each other (1,024 pairs, 55 us a
-- path pair), so a few hundred scoped items behind one lease took seconds
-- of every claim of their project.
--
-- The rule is unchanged (graph.ScopeOverlaps; TestScopeOverlapSQL holds
-- the two to each other on every pair of small globs and 3,000 random
-- ones); what changes is how soon it is decided:
--   * equal scopes overlap, and scopes of different resources never do,
--     before either path is split;
--   * two paths without "**" overlap exactly when they have as many
--     segments and each pair of segments overlaps: one pass;
--   * otherwise the segments before the first "**" of either path must
--     overlap pairwise (a common path matches both from its start, one
--     segment for one, until a "**"), and so must those after the last
--     "**" of either, counted from the end: a pair that does not refuses
--     at once, which is how two globs of one resource usually differ;
--   * only then the table, whose cells compare two literal segments
--     inline and call wg_segments_overlap only for a segment with "*",
--     and only when the rest of the path can still match.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_paths_overlap(a text[], b text[]) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    n int := coalesce(array_length(a, 1), 0);
    m int := coalesce(array_length(b, 1), 0);
    fa int := coalesce(array_position(a, '**'), n + 1);  -- first "**" (1-based), n + 1 when none
    fb int := coalesce(array_position(b, '**'), m + 1);
    ta int;  -- segments after the last "**", n when none
    tb int;
    w int := m + 1;
    ok boolean[];
    v boolean;
    x text;
    y text;
BEGIN
    -- The segments before the first "**" of either path, pairwise.
    FOR i IN 1 .. least(fa, fb, n + 1, m + 1) - 1 LOOP
        x := a[i];
        y := b[i];
        IF x <> y THEN
            IF strpos(x, '*') = 0 AND strpos(y, '*') = 0 THEN
                RETURN false;  -- two different literals
            END IF;
            IF NOT wg_segments_overlap(x, y) THEN
                RETURN false;
            END IF;
        END IF;
    END LOOP;
    IF fa > n AND fb > m THEN
        -- Neither has "**": one segment for one, all of them compared above.
        RETURN n = m;
    END IF;
    -- The segments after the last "**" of either path, from the end.
    ta := n;
    FOR i IN REVERSE n .. 1 LOOP
        IF a[i] = '**' THEN
            ta := n - i;
            EXIT;
        END IF;
    END LOOP;
    tb := m;
    FOR j IN REVERSE m .. 1 LOOP
        IF b[j] = '**' THEN
            tb := m - j;
            EXIT;
        END IF;
    END LOOP;
    FOR k IN 0 .. least(ta, tb) - 1 LOOP
        x := a[n - k];
        y := b[m - k];
        IF x <> y THEN
            IF strpos(x, '*') = 0 AND strpos(y, '*') = 0 THEN
                RETURN false;  -- two different literals
            END IF;
            IF NOT wg_segments_overlap(x, y) THEN
                RETURN false;
            END IF;
        END IF;
    END LOOP;
    -- The table: ok[i * w + j + 1] says whether a's segments from i + 1
    -- and b's from j + 1 (1-based) match a common path.
    ok := array_fill(false, ARRAY[(n + 1) * (m + 1)]);
    FOR i IN REVERSE n..0 LOOP
        FOR j IN REVERSE m..0 LOOP
            IF i = n AND j = m THEN
                v := true;
            ELSIF i < n AND a[i + 1] = '**' THEN
                v := ok[(i + 1) * w + j + 1] OR (j < m AND ok[i * w + j + 2]);
            ELSIF j < m AND b[j + 1] = '**' THEN
                v := ok[i * w + j + 2] OR (i < n AND ok[(i + 1) * w + j + 1]);
            ELSIF i < n AND j < m THEN
                v := ok[(i + 1) * w + j + 2];
                IF v THEN
                    x := a[i + 1];
                    y := b[j + 1];
                    IF x <> y THEN
                        v := (strpos(x, '*') > 0 OR strpos(y, '*') > 0) AND wg_segments_overlap(x, y);
                    END IF;
                END IF;
            ELSE
                v := false;
            END IF;
            ok[i * w + j + 1] := coalesce(v, false);
        END LOOP;
    END LOOP;
    RETURN ok[1];
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION wg_scopes_overlap(a text[], b text[]) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    x text;
    y text;
    rx text;
    cx int;
    cy int;
BEGIN
    FOREACH x IN ARRAY a LOOP
        CONTINUE WHEN x IS NULL;
        cx := strpos(x, ':');
        rx := CASE WHEN cx = 0 THEN x ELSE left(x, cx - 1) END;
        FOREACH y IN ARRAY b LOOP
            CONTINUE WHEN y IS NULL;
            IF x = y THEN
                RETURN true;
            END IF;
            cy := strpos(y, ':');
            CONTINUE WHEN rx <> CASE WHEN cy = 0 THEN y ELSE left(y, cy - 1) END;
            IF cx = 0 OR cy = 0
               OR wg_paths_overlap(string_to_array(substr(x, cx + 1), '/'),
                                   string_to_array(substr(y, cy + 1), '/')) THEN
                RETURN true;
            END IF;
        END LOOP;
    END LOOP;
    RETURN false;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
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
CREATE OR REPLACE FUNCTION wg_paths_overlap(a text[], b text[]) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    n int := coalesce(array_length(a, 1), 0);
    m int := coalesce(array_length(b, 1), 0);
    w int := m + 1;
    ok boolean[] := array_fill(false, ARRAY[(n + 1) * (m + 1)]);
    v boolean;
BEGIN
    -- The common case, decided at once: different literal first segments.
    IF n > 0 AND m > 0 AND strpos(a[1], '*') = 0 AND strpos(b[1], '*') = 0 AND a[1] <> b[1] THEN
        RETURN false;
    END IF;
    FOR i IN REVERSE n..0 LOOP
        FOR j IN REVERSE m..0 LOOP
            IF i = n AND j = m THEN
                v := true;
            ELSIF i < n AND a[i + 1] = '**' THEN
                v := ok[(i + 1) * w + j + 1] OR (j < m AND ok[i * w + j + 2]);
            ELSIF j < m AND b[j + 1] = '**' THEN
                v := ok[i * w + j + 2] OR (i < n AND ok[(i + 1) * w + j + 1]);
            ELSIF i < n AND j < m THEN
                v := ok[(i + 1) * w + j + 2] AND wg_segments_overlap(a[i + 1], b[j + 1]);
            ELSE
                v := false;
            END IF;
            ok[i * w + j + 1] := coalesce(v, false);
        END LOOP;
    END LOOP;
    RETURN ok[1];
END;
$$;
-- +goose StatementEnd
