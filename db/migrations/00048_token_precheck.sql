-- +goose Up
-- Preconditions a REST step carries in its first round trip
-- (docs/adr/0007-lean-hot-path.md, REST addendum; db.Precheck): statements
-- sent at the head of the step's first statement or batch, in the same
-- implicit transaction, that raise WG006 when the step must not go on, so
-- the batch aborts and nothing of it commits. DETAIL names the error kind
-- of the refusal (a wgerr code, or idempotency_taken).
--
-- request_precondition raises WG006 with DETAIL code unless ok.
-- +goose StatementBegin
CREATE FUNCTION request_precondition(ok boolean, code text, message text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT ok THEN
        RAISE EXCEPTION '%', message USING ERRCODE = 'WG006', DETAIL = code;
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- token_still_valid: the API keeps what it verified of a token (its id,
-- secret hash, name, role and project, none of which the service ever
-- changes) and checks with this in the step's first round trip, instead
-- of looking the token up in one of its own, that the token still exists
-- unrevoked with exactly those fields: a revocation committed anywhere,
-- even straight into the database, refuses the very next request on every
-- replica, as the lookup did.
-- +goose StatementBegin
CREATE FUNCTION token_still_valid(tid uuid, hash bytea, tname text, trole text, tproject uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN request_precondition(EXISTS (
        SELECT 1 FROM tokens t
        WHERE t.id = tid AND t.secret_hash = hash AND t.name = tname AND t.role = trole
          AND t.project_id IS NOT DISTINCT FROM tproject AND t.revoked_at IS NULL
    ), 'unauthenticated', 'the token is no longer valid');
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS token_still_valid(uuid, bytea, text, text, uuid);
DROP FUNCTION IF EXISTS request_precondition(boolean, text, text);
