-- +goose Up
-- A write scope is held by a lease until the lease is ended, not until its
-- expiry passes. A heartbeat admitted by its fence just before the expiry
-- and committed just after it keeps its lease live without a gap, and its
-- row lock makes the claim's reap (ExpireLeases, SKIP LOCKED) pass the
-- lease by; a claim running between the two read the lease's last
-- committed expiry, judged it gone and granted an overlapping scope: two
-- live leases overlapped once the heartbeat committed
-- (lease TestScopeHeldThroughHeartbeatAtExpiry). A lease past its expiry
-- is ended by a write (the claim's reap or the sweeper), which waits for a
-- heartbeat in flight and judges the lease again after it; until then its
-- scopes stay held, as its item stays leased. p_at stays in the signature
-- (the statements that call this pass it) and is no longer read.
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
