-- +goose Up
-- Capabilities and write scopes (see docs/architecture.md, "Capabilities
-- and write scopes").
--
-- items.requires: the capabilities a worker must offer to be handed the
-- item (a claim's capabilities must contain them all).
-- items.touches: the write scopes the item's work holds while it is leased,
-- each "resource" or "resource:path/glob" (grammar: graph/scope.go).
-- leases.scopes: the item's touches as they were at the claim; the lease
-- holds them while it is live (not ended and not past expires_at), so a
-- scope is free the moment its lease ends in any way, expiry included.
-- leases.scope_resources: the distinct resources of scopes, for the GIN
-- index the claim's overlap test reads (00033).
ALTER TABLE items
    ADD COLUMN requires text[] NOT NULL DEFAULT '{}',
    ADD COLUMN touches  text[] NOT NULL DEFAULT '{}';
ALTER TABLE leases
    ADD COLUMN scopes          text[] NOT NULL DEFAULT '{}',
    ADD COLUMN scope_resources text[] NOT NULL DEFAULT '{}';

-- The capability sets workers offered in their claims, one row per worker
-- label, rewritten when the set changes or the row is older than a minute
-- (so a worker claiming in a loop writes it about once a minute). The item
-- page names the required capabilities no worker offered recently.
CREATE TABLE worker_offers (
    project_id   uuid        NOT NULL REFERENCES projects (id),
    worker       text        NOT NULL,
    capabilities text[]      NOT NULL,
    offered_at   timestamptz NOT NULL,
    PRIMARY KEY (project_id, worker)
);

-- The overlap of two write scopes, the one rule the claim applies in SQL
-- and graph.ScopesOverlap applies in Go (a test checks that they agree).
-- Two scopes overlap when their resources are equal and either has no path
-- (it covers the whole resource) or their path globs match a common path.
-- A glob is segments joined by "/": "**" matches zero or more segments,
-- any other segment matches one segment, "*" in it matching any run of
-- characters (none included) within that segment.

-- +goose StatementBegin
-- wg_segments_overlap: whether two one-segment patterns match a common
-- segment. Without "*" a pattern is a literal. A literal and a pattern: the
-- pattern matches the literal. Two patterns with "*": their literal
-- prefixes (before the first "*") are prefixes of one another and their
-- literal suffixes (after the last "*") suffixes of one another; then the
-- longer prefix, both middles and the longer suffix, in that order, form a
-- segment both match.
CREATE FUNCTION wg_segments_overlap(a text, b text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    sa boolean := strpos(a, '*') > 0;
    sb boolean := strpos(b, '*') > 0;
    pa text; pb text; xa text; xb text;
BEGIN
    IF NOT sa AND NOT sb THEN
        RETURN a = b;
    END IF;
    IF NOT sa THEN
        RETURN a LIKE replace(replace(b, '_', '\_'), '*', '%');
    END IF;
    IF NOT sb THEN
        RETURN b LIKE replace(replace(a, '_', '\_'), '*', '%');
    END IF;
    pa := split_part(a, '*', 1);
    pb := split_part(b, '*', 1);
    xa := reverse(split_part(reverse(a), '*', 1));
    xb := reverse(split_part(reverse(b), '*', 1));
    RETURN (starts_with(pa, pb) OR starts_with(pb, pa))
       AND (right(xa, length(xb)) = xb OR right(xb, length(xa)) = xa);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_paths_overlap: whether two globs (as arrays of segments) match a
-- common path. ok(i, j) says whether the globs' tails from segment i and j
-- match a common path; it is filled from the ends backwards.
CREATE FUNCTION wg_paths_overlap(a text[], b text[]) RETURNS boolean
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

-- +goose StatementBegin
CREATE FUNCTION wg_scope_overlaps(a text, b text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT split_part(a, ':', 1) = split_part(b, ':', 1)
       AND (strpos(a, ':') = 0 OR strpos(b, ':') = 0
            OR wg_paths_overlap(string_to_array(substr(a, strpos(a, ':') + 1), '/'),
                                string_to_array(substr(b, strpos(b, ':') + 1), '/')))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_scopes_overlap: whether any scope of a overlaps any scope of b.
CREATE FUNCTION wg_scopes_overlap(a text[], b text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(a) AS x, unnest(b) AS y WHERE wg_scope_overlaps(x, y))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
-- wg_scope_resources: the distinct resources of scopes, sorted.
CREATE FUNCTION wg_scope_resources(s text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT split_part(x, ':', 1) ORDER BY split_part(x, ':', 1)), '{}')
    FROM unnest(s) AS x
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION wg_scope_resources(text[]);
DROP FUNCTION wg_scopes_overlap(text[], text[]);
DROP FUNCTION wg_scope_overlaps(text, text);
DROP FUNCTION wg_paths_overlap(text[], text[]);
DROP FUNCTION wg_segments_overlap(text, text);
DROP TABLE worker_offers;
ALTER TABLE leases DROP COLUMN scope_resources, DROP COLUMN scopes;
ALTER TABLE items DROP COLUMN touches, DROP COLUMN requires;
