-- +goose Up
-- The bearer token check a REST step carries in its first round trip
-- (docs/adr/0007-lean-hot-path.md, REST addendum): the API keeps what it
-- verified of a token (its id, secret hash, name, role and project, none of
-- which the service ever changes) and sends this check in the same batch
-- as the step's writing statement, so the step costs no lookup of its own.
-- The function raises WG006 unless the token still exists unrevoked with
-- exactly those fields: the batch aborts and nothing of it commits, so a
-- revocation committed anywhere, even straight into the database, refuses
-- the very next request on every replica, as the lookup did.
-- +goose StatementBegin
CREATE FUNCTION token_still_valid(tid uuid, hash bytea, tname text, trole text, tproject uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM tokens t
        WHERE t.id = tid AND t.secret_hash = hash AND t.name = tname AND t.role = trole
          AND t.project_id IS NOT DISTINCT FROM tproject AND t.revoked_at IS NULL
    ) THEN
        RAISE EXCEPTION 'the token is no longer valid' USING ERRCODE = 'WG006';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS token_still_valid(uuid, bytea, text, text, uuid);
