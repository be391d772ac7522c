-- A person's reason for asking a worker to stop (POST /v1/leases/{id}/stop
-- {"reason"}), kept with the request (stop_requested_at, _by) and shown on
-- the lease, so the worker learns why with its next heartbeat.
-- +goose Up
ALTER TABLE leases ADD COLUMN stop_note text CHECK (length(stop_note) BETWEEN 1 AND 65536);

-- +goose Down
ALTER TABLE leases DROP COLUMN stop_note;
