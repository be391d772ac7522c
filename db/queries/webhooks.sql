-- name: CreateWebhook :one
-- A new webhook follows the log from the newest number taken when it is
-- created: it is told of what happens from then on.
INSERT INTO webhooks (project_id, url, event_types, secret, format, recipient, description, enabled, disabled_at,
                      cursor, created_by, created_at, updated_at)
VALUES (@project_id, @url, @event_types::text[], @secret, @format, sqlc.narg('recipient'), @description, @enabled::boolean,
        CASE WHEN @enabled::boolean THEN NULL ELSE coalesce(sqlc.narg('now')::timestamptz, now()) END,
        coalesce(pg_sequence_last_value('events_seq'::regclass), 0),
        @created_by, coalesce(sqlc.narg('now')::timestamptz, now()), coalesce(sqlc.narg('now')::timestamptz, now()))
RETURNING *;

-- name: GetWebhook :one
SELECT * FROM webhooks WHERE project_id = @project_id AND id = @id;

-- name: ListWebhooks :many
SELECT * FROM webhooks WHERE project_id = @project_id ORDER BY created_at, id;

-- name: UpdateWebhook :one
-- Changes the fields given. Enabling a webhook clears what disabled it
-- (its run of failures, and the pause the run brought) and makes its
-- pending deliveries due at once; the cursor is kept, so
-- nothing that happened while it was disabled is lost.
UPDATE webhooks SET
    url = coalesce(sqlc.narg('url'), url),
    event_types = coalesce(sqlc.narg('event_types')::text[], event_types),
    format = coalesce(sqlc.narg('format'), format),
    recipient = CASE WHEN @set_recipient::boolean THEN sqlc.narg('recipient') ELSE recipient END,
    description = coalesce(sqlc.narg('description'), description),
    enabled = coalesce(sqlc.narg('enabled')::boolean, enabled),
    disabled_reason = CASE WHEN sqlc.narg('enabled')::boolean IS NOT NULL THEN NULL ELSE disabled_reason END,
    disabled_at = CASE
        WHEN sqlc.narg('enabled')::boolean THEN NULL
        WHEN sqlc.narg('enabled')::boolean = false AND enabled THEN coalesce(sqlc.narg('now')::timestamptz, now())
        ELSE disabled_at END,
    failing_since = CASE WHEN sqlc.narg('enabled')::boolean THEN NULL ELSE failing_since END,
    consecutive_failures = CASE WHEN sqlc.narg('enabled')::boolean THEN 0 ELSE consecutive_failures END,
    paused_until = CASE WHEN sqlc.narg('enabled')::boolean THEN NULL ELSE paused_until END,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE project_id = @project_id AND id = @id
RETURNING *;

-- name: RetryPendingDeliveries :exec
-- A re-enabled webhook's pending deliveries become due now.
UPDATE webhook_deliveries SET next_attempt_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE project_id = @project_id AND webhook_id = @webhook_id AND state = 'pending';

-- name: ParkPendingDeliveries :exec
-- A disabled webhook's pending deliveries wait for it at the far end of
-- the due index (next_attempt_at 'infinity'; RetryPendingDeliveries makes
-- them due when it is enabled again), where the search for due work
-- (DueDeliveryProjects), which reads the oldest due rows only, never
-- meets them: left due, a backlog of them hid every other webhook's. Rows
-- another transaction holds (an attempt's result being recorded) are
-- skipped, so it never waits and deadlocks with nothing: such a row is
-- parked by FinishAttempt when that sees the webhook disabled, else it
-- costs the search one row (which skips rows of disabled webhooks).
UPDATE webhook_deliveries d SET next_attempt_at = 'infinity'
FROM (
    SELECT p.project_id, p.webhook_id, p.seq FROM webhook_deliveries p
    WHERE p.project_id = @project_id AND p.webhook_id = @webhook_id AND p.state = 'pending'
    FOR UPDATE SKIP LOCKED
) AS s
WHERE d.project_id = s.project_id AND d.webhook_id = s.webhook_id AND d.seq = s.seq;

-- name: ParkDelivery :exec
-- Parks one pending delivery of a disabled webhook (see
-- ParkPendingDeliveries): the one whose failed attempt the caller's
-- transaction has just recorded, so holds its lock already.
UPDATE webhook_deliveries SET next_attempt_at = 'infinity'
WHERE project_id = @project_id AND webhook_id = @webhook_id AND seq = @seq AND state = 'pending';

-- name: DeleteWebhook :execrows
-- A webhook and its deliveries go together.
DELETE FROM webhooks WHERE project_id = @project_id AND id = @id;

-- name: WebhooksBehind :many
-- Enabled webhooks whose cursor is below number up_to (a horizon): the
-- fan-out's work, over every project (a read across projects listed in
-- db/citus_test.go; each fan-out then runs in its webhook's project).
SELECT project_id, id FROM webhooks
WHERE enabled AND cursor < @up_to::bigint
ORDER BY cursor
LIMIT @max_rows;

-- name: WebhooksBehindAny :one
-- Whether any webhook is enabled (none: no delivery can be due, and an
-- idle replica polls less often), and whether any enabled webhook's cursor
-- is below the newest number taken: the cheap check of each idle poll,
-- before a horizon is worth its wait.
SELECT EXISTS (SELECT 1 FROM webhooks WHERE enabled) AS any_enabled,
       EXISTS (
           SELECT 1 FROM webhooks
           WHERE enabled AND cursor < coalesce(pg_sequence_last_value('events_seq'::regclass), 0)
       ) AS behind;

-- name: FanOutWebhook :one
-- Makes the delivery rows of one webhook for the events after its cursor
-- up to the horizon, at most max_rows of them, and moves the cursor in the
-- same statement: to the last event taken, or to the horizon when fewer
-- than max_rows matched (then none between is wanted). The webhook row is
-- locked (SKIP LOCKED: another replica's fan-out of it is under way), so
-- two replicas never fan out one webhook at once; ON CONFLICT keeps one
-- row per (webhook, event) whatever happens.
WITH w AS (
    SELECT wh.project_id, wh.id, wh.cursor, wh.event_types FROM webhooks wh
    WHERE wh.project_id = @project_id AND wh.id = @id AND wh.enabled AND wh.cursor < @up_to::bigint
    FOR UPDATE SKIP LOCKED
), ev AS (
    -- The webhook's project's events after its cursor, read from
    -- events_pkey (project_id, seq) from the cursor on. The bounds are
    -- row comparisons on (project_id, seq), which only that index can
    -- take, and the lateral query takes the cursor as its own bound: with
    -- "seq > cursor" the search was planned as a walk of every project's
    -- events in order (events_all) from the cursor, testing each one's
    -- project (the planner knows the project is one, so events_all gives
    -- the order asked for too): 3.7 million events and 6 s a call in a
    -- database the benchmark had filled, and every webhook delivery waited
    -- for it.
    SELECT e.seq, e.type
    FROM w CROSS JOIN LATERAL (
        SELECT e.seq, e.type FROM events e
        WHERE e.project_id = w.project_id
          AND (e.project_id, e.seq) > (w.project_id, w.cursor)
          AND (e.project_id, e.seq) <= (w.project_id, @up_to::bigint)
          AND (cardinality(w.event_types) = 0 OR e.type = ANY (w.event_types))
        ORDER BY e.seq
        LIMIT @max_rows::int) e
), ins AS (
    INSERT INTO webhook_deliveries (project_id, webhook_id, seq, event_type, next_attempt_at, created_at)
    SELECT w.project_id, w.id, ev.seq, ev.type,
           coalesce(sqlc.narg('now')::timestamptz, now()), coalesce(sqlc.narg('now')::timestamptz, now())
    FROM w, ev
    ON CONFLICT DO NOTHING
    RETURNING seq
)
UPDATE webhooks wh SET cursor = CASE
        WHEN (SELECT count(*) FROM ev) < @max_rows::int THEN @up_to::bigint
        ELSE (SELECT max(seq) FROM ev) END
FROM w
WHERE wh.project_id = w.project_id AND wh.id = w.id
RETURNING (SELECT count(*) FROM ins)::int AS created;

-- name: DueDeliveryProjects :many
-- Projects with a webhook that may start an attempt now: enabled, not
-- paused (paused_until), with fewer attempts in flight than its bound
-- (max_in_flight; 1 once its run has trip_after failures or more) and a
-- delivery due (pending, its next attempt passed, not locked by a live
-- attempt). The delivery's work, over every project (a read across
-- projects listed in db/citus_test.go; each claim then runs in one
-- project), the project whose webhook waits longest first, at most
-- max_projects. It probes each such webhook's oldest due rows
-- (webhook_deliveries_webhook_due), past its few in flight, so a round
-- costs the same with a backlog of ten or of a million, however it is
-- spread: a backlog of a webhook at its bound or paused is not read at
-- all, and never stands in front of another webhook's work. Rows of
-- disabled webhooks are parked besides (next_attempt_at 'infinity').
WITH busy AS (
    SELECT f.project_id, f.webhook_id, count(*) AS n FROM webhook_deliveries f
    WHERE f.lock_token IS NOT NULL AND f.state = 'pending'
      AND f.locked_until > coalesce(sqlc.narg('now')::timestamptz, now())
    GROUP BY f.project_id, f.webhook_id
), ready AS (
    SELECT w.project_id, first.next_attempt_at
    FROM webhooks w
    LEFT JOIN busy b ON b.project_id = w.project_id AND b.webhook_id = w.id
    CROSS JOIN LATERAL (
        SELECT d.next_attempt_at FROM webhook_deliveries d
        WHERE d.project_id = w.project_id AND d.webhook_id = w.id AND d.state = 'pending'
          AND d.next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
          AND (d.locked_until IS NULL OR d.locked_until <= coalesce(sqlc.narg('now')::timestamptz, now()))
        ORDER BY d.next_attempt_at
        LIMIT 1
    ) AS first
    WHERE w.enabled
      AND (w.paused_until IS NULL OR w.paused_until <= coalesce(sqlc.narg('now')::timestamptz, now()))
      AND coalesce(b.n, 0) < CASE WHEN w.consecutive_failures >= @trip_after::int THEN 1 ELSE @max_in_flight::int END
)
SELECT ready.project_id FROM ready
GROUP BY ready.project_id
ORDER BY min(ready.next_attempt_at)
LIMIT @max_projects;

-- name: LockDeliveringWebhooks :many
-- The first statement of a claim's transaction (ClaimDeliveries is the
-- second): locks the project's webhooks that may start an attempt now
-- (enabled, not paused, a delivery due), skipping those another replica's
-- claim holds. While a claim holds its webhooks no other claim takes their
-- deliveries, so the claim that follows, with a snapshot taken once the
-- locks are held, counts every attempt in flight of them: the bound on
-- each webhook's attempts holds across replicas. FOR NO KEY UPDATE leaves
-- the webhook's key free for the deliveries that fan-out inserts.
SELECT w.id FROM webhooks w
WHERE w.project_id = @project_id AND w.enabled
  AND (w.paused_until IS NULL OR w.paused_until <= coalesce(sqlc.narg('now')::timestamptz, now()))
  AND EXISTS (
    SELECT 1 FROM webhook_deliveries d
    WHERE d.project_id = w.project_id AND d.webhook_id = w.id AND d.state = 'pending'
      AND d.next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
      AND (d.locked_until IS NULL OR d.locked_until <= coalesce(sqlc.narg('now')::timestamptz, now())))
ORDER BY w.id
FOR NO KEY UPDATE SKIP LOCKED;

-- name: ClaimDeliveries :many
-- Takes up to max_rows due deliveries of webhooks webhook_ids of one
-- project (locked by LockDeliveringWebhooks in the caller's transaction)
-- for one attempt each: locked until lock_until by the database's clock
-- under lock_token, the attempt counted. Each webhook gets no more than
-- its bound less its attempts in flight (max_in_flight; 1 once its run has
-- trip_after failures or more: one attempt tries a receiver that has
-- failed, and a success opens it to the rest), its longest due first; the
-- rows of all of them are taken longest due first. Each row comes with what
-- its attempt sends: its webhook and its event (event_seq NULL: the event
-- is gone, removed by retention), and its webhook's run of failures so far.
WITH hooks AS (
    SELECT w.project_id, w.id,
           CASE WHEN w.consecutive_failures >= @trip_after::int THEN 1 ELSE @max_in_flight::int END
           - (SELECT count(*) FROM webhook_deliveries f
              WHERE f.project_id = w.project_id AND f.webhook_id = w.id AND f.lock_token IS NOT NULL
                AND f.state = 'pending' AND f.locked_until > coalesce(sqlc.narg('now')::timestamptz, now()))::int AS free
    FROM webhooks w
    WHERE w.project_id = @project_id AND w.id = ANY (@webhook_ids::uuid[]) AND w.enabled
), due AS (
    SELECT d.project_id, d.webhook_id, d.seq, d.next_attempt_at
    FROM hooks h CROSS JOIN LATERAL (
        SELECT d.project_id, d.webhook_id, d.seq, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.project_id = h.project_id AND d.webhook_id = h.id AND d.state = 'pending'
          AND d.next_attempt_at <= coalesce(sqlc.narg('now')::timestamptz, now())
          AND (d.locked_until IS NULL OR d.locked_until <= coalesce(sqlc.narg('now')::timestamptz, now()))
        ORDER BY d.next_attempt_at, d.seq
        LIMIT greatest(h.free, 0)
        FOR UPDATE SKIP LOCKED
    ) AS d
    ORDER BY d.next_attempt_at, d.seq
    LIMIT @max_rows
), claimed AS (
    UPDATE webhook_deliveries d SET
        locked_until = coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @lock_seconds::float8),
        lock_token = @lock_token::uuid,
        attempts = d.attempts + 1
    FROM due
    WHERE d.project_id = due.project_id AND d.webhook_id = due.webhook_id AND d.seq = due.seq
    RETURNING d.project_id, d.webhook_id, d.seq, d.attempts, d.created_at
)
SELECT c.project_id, c.webhook_id, c.seq, c.attempts, c.created_at,
       w.url, w.secret, w.format, w.recipient, w.failing_since, p.name AS project_name,
       w.previous_secret,
       coalesce(w.previous_secret_until > coalesce(sqlc.narg('now')::timestamptz, now()), false)::boolean AS previous_secret_signs,
       e.seq AS event_seq, e.type AS event_type, e.at AS event_at, e.actor, e.item_id, e.lease_id,
       e.attention_id, e.payload
FROM claimed c
JOIN webhooks w ON w.project_id = c.project_id AND w.id = c.webhook_id
JOIN projects p ON p.id = c.project_id
LEFT JOIN events e ON e.project_id = c.project_id AND e.seq = c.seq
ORDER BY c.seq;

-- name: FinishAttempt :one
-- Records one attempt's result, fenced by the lock it was made under (no
-- row: the lock expired and the delivery is another attempt's now).
-- new_state 'pending' schedules the next attempt retry_in_seconds from now,
-- unless the delivery's event is older than retry_for_seconds: then it has
-- failed for good. Returns the state written.
WITH d AS (
    UPDATE webhook_deliveries wd SET
        state = CASE
            WHEN @new_state::text = 'pending' AND wd.created_at <= coalesce(sqlc.narg('now')::timestamptz, now())
                - make_interval(secs => @retry_for_seconds::float8) THEN 'failed'
            ELSE @new_state::text END,
        next_attempt_at = CASE
            WHEN @new_state::text <> 'pending' THEN wd.next_attempt_at
            -- Disabled while the attempt was in flight: parked with the
            -- webhook's other deliveries (ParkPendingDeliveries).
            WHEN NOT (SELECT w.enabled FROM webhooks w WHERE w.project_id = wd.project_id AND w.id = wd.webhook_id)
                THEN 'infinity'::timestamptz
            ELSE coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @retry_in_seconds::float8) END,
        locked_until = NULL, lock_token = NULL,
        last_status = sqlc.narg('status')::int, last_latency_ms = @latency_ms::int,
        last_response = sqlc.narg('response')::text, last_error = sqlc.narg('error')::text,
        finished_at = CASE
            WHEN @new_state::text = 'pending' AND wd.created_at > coalesce(sqlc.narg('now')::timestamptz, now())
                - make_interval(secs => @retry_for_seconds::float8) THEN NULL
            ELSE coalesce(sqlc.narg('now')::timestamptz, now()) END
    WHERE wd.project_id = @project_id AND wd.webhook_id = @webhook_id AND wd.seq = @seq
      AND wd.state = 'pending' AND wd.lock_token = @lock_token::uuid AND wd.attempts = @attempt
    RETURNING wd.project_id, wd.webhook_id, wd.seq, wd.attempts, wd.state
), a AS (
    INSERT INTO webhook_attempts (project_id, webhook_id, seq, attempt, at, status, latency_ms, response, error)
    SELECT d.project_id, d.webhook_id, d.seq, d.attempts, coalesce(sqlc.narg('now')::timestamptz, now()),
           sqlc.narg('status')::int, @latency_ms::int, sqlc.narg('response')::text, sqlc.narg('error')::text
    FROM d
)
SELECT d.state FROM d;

-- name: ReleaseDelivery :execrows
-- Gives back a delivery whose attempt this server cut short (its replica
-- was stopping), fenced by the lock it was claimed under like
-- FinishAttempt: unlocked and its attempt uncounted, with nothing recorded
-- of it, so the next round of any replica attempts it as if this one had
-- never started (same webhook-id), and its receiver is charged no failure.
UPDATE webhook_deliveries wd SET locked_until = NULL, lock_token = NULL, attempts = wd.attempts - 1
WHERE wd.project_id = @project_id AND wd.webhook_id = @webhook_id AND wd.seq = @seq
  AND wd.state = 'pending' AND wd.lock_token = @lock_token::uuid AND wd.attempts = @attempt;

-- name: FinishDelivered :many
-- Records the successful attempts of one claim (lock_token) in one
-- statement: each row of the arrays is a delivery (webhook_ids[i],
-- seqs[i]) that attempt attempts[i] delivered with statuses[i], fenced by
-- the lock like FinishAttempt (a row whose lock passed to another attempt
-- is left alone). responses[i] '' is no answer body. Returns the
-- deliveries recorded.
WITH r AS (
    SELECT unnest(@webhook_ids::uuid[]) AS webhook_id, unnest(@seqs::bigint[]) AS seq,
           unnest(@attempts::int[]) AS attempt, unnest(@statuses::int[]) AS status,
           unnest(@latencies_ms::int[]) AS latency_ms, unnest(@responses::text[]) AS response
), d AS (
    UPDATE webhook_deliveries wd SET
        state = 'delivered', locked_until = NULL, lock_token = NULL,
        last_status = r.status, last_latency_ms = r.latency_ms, last_response = nullif(r.response, ''),
        last_error = NULL, finished_at = coalesce(sqlc.narg('now')::timestamptz, now())
    FROM r
    WHERE wd.project_id = @project_id AND wd.webhook_id = r.webhook_id AND wd.seq = r.seq
      AND wd.state = 'pending' AND wd.lock_token = @lock_token::uuid AND wd.attempts = r.attempt
    RETURNING wd.project_id, wd.webhook_id, wd.seq, wd.attempts, r.status, r.latency_ms, r.response
), a AS (
    INSERT INTO webhook_attempts (project_id, webhook_id, seq, attempt, at, status, latency_ms, response)
    SELECT d.project_id, d.webhook_id, d.seq, d.attempts, coalesce(sqlc.narg('now')::timestamptz, now()),
           d.status, d.latency_ms, nullif(d.response, '')
    FROM d
)
SELECT d.webhook_id, d.seq FROM d;

-- name: WebhookSucceeded :exec
-- A success ends the webhook's run of failures, and the pause the run
-- brought.
UPDATE webhooks SET failing_since = NULL, consecutive_failures = 0, paused_until = NULL
WHERE project_id = @project_id AND id = @id
  AND (failing_since IS NOT NULL OR consecutive_failures > 0 OR paused_until IS NOT NULL);

-- name: WebhookFailed :one
-- A failure starts the webhook's run of failures (or continues it); once
-- the run has lasted disable_after, the webhook is disabled and says why.
-- consecutive_failures: the run's failures, this one counted (the caller
-- pauses the webhook once they are many: PauseWebhook).
-- disabled_now: this failure disabled it (the caller then parks its
-- pending deliveries, ParkPendingDeliveries, once this has committed);
-- enabled: it still is (when not, the caller parks the delivery of this
-- failure, ParkDelivery, which the disabling's parking may have skipped).
WITH cur AS (
    SELECT c.project_id, c.id, c.enabled,
           coalesce(c.failing_since, coalesce(sqlc.narg('now')::timestamptz, now())) AS since,
           coalesce(sqlc.narg('now')::timestamptz, now()) - make_interval(secs => @disable_after_seconds::float8) AS cutoff
    FROM webhooks c
    WHERE c.project_id = @project_id AND c.id = @id
    FOR UPDATE
)
UPDATE webhooks w SET
    failing_since = cur.since,
    consecutive_failures = w.consecutive_failures + 1,
    enabled = cur.enabled AND cur.since > cur.cutoff,
    disabled_reason = CASE WHEN cur.enabled AND cur.since <= cur.cutoff THEN @reason::text ELSE w.disabled_reason END,
    disabled_at = CASE WHEN cur.enabled AND cur.since <= cur.cutoff
        THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE w.disabled_at END
FROM cur
WHERE w.project_id = cur.project_id AND w.id = cur.id
RETURNING (cur.enabled AND cur.since <= cur.cutoff)::boolean AS disabled_now,
          (cur.enabled AND cur.since > cur.cutoff)::boolean AS enabled,
          w.consecutive_failures;

-- name: PauseWebhook :exec
-- Starts no attempt of the webhook before pause_seconds from now (a pause
-- already longer stays): its receiver keeps failing, or asked to be left
-- alone for a while (Retry-After). The caller's transaction holds the row
-- (WebhookFailed).
UPDATE webhooks SET paused_until = greatest(paused_until,
    coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @pause_seconds::float8))
WHERE project_id = @project_id AND id = @id AND enabled;

-- name: ListDeliveries :many
-- A webhook's most recent deliveries, newest event first (next_attempt_at
-- NULL for a parked one).
SELECT project_id, webhook_id, seq, event_type, state, attempts,
       -- NULL: parked, waiting for its webhook to be enabled.
       CASE WHEN next_attempt_at <> 'infinity'::timestamptz THEN next_attempt_at END AS next_attempt_at,
       last_status, last_latency_ms, last_response, last_error, created_at, finished_at
FROM webhook_deliveries
WHERE project_id = @project_id AND webhook_id = @webhook_id
  AND (sqlc.narg('before')::bigint IS NULL OR seq < sqlc.narg('before')::bigint)
ORDER BY seq DESC
LIMIT @max_rows;

-- name: DisabledWebhooks :many
-- A project's webhooks that delivery disabled: the notice of the web UI.
SELECT id, url, disabled_reason, disabled_at FROM webhooks
WHERE project_id = @project_id AND NOT enabled AND disabled_reason IS NOT NULL
ORDER BY disabled_at DESC;

-- name: EnableDeliveryDeletion :exec
-- Lets the retention service's transaction delete finished deliveries
-- (00039).
SELECT set_config('workgraph.deliveries_retention', 'on', true);

-- name: ProjectsWithOldDeliveries :many
-- The projects with a delivery finished more than @keep_ms before now
-- (retention): one index probe per project, a cross-project read of the
-- projects reference table.
SELECT p.id FROM projects p
WHERE EXISTS (
    SELECT 1 FROM webhook_deliveries d
    WHERE d.project_id = p.id AND d.state <> 'pending'
      AND d.finished_at < coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
                          - sqlc.arg('keep_ms')::bigint * interval '1 millisecond'
)
ORDER BY p.id;

-- name: DeleteOldDeliveries :execrows
-- Retention: deletes up to @max_rows of a project's deliveries that were
-- delivered or failed more than @keep_ms before now (the database clock,
-- or a test's stub), oldest first, with their attempts. Pending
-- deliveries stay. The caller's transaction has run
-- EnableDeliveryDeletion; the table refuses anything finished less than a
-- day ago.
WITH old AS (
    SELECT d.webhook_id, d.seq FROM webhook_deliveries d
    WHERE d.project_id = @project_id::uuid AND d.state <> 'pending'
      AND d.finished_at < coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
                          - sqlc.arg('keep_ms')::bigint * interval '1 millisecond'
    ORDER BY d.finished_at
    LIMIT @max_rows
)
DELETE FROM webhook_deliveries d
USING old
WHERE d.project_id = @project_id::uuid AND d.webhook_id = old.webhook_id AND d.seq = old.seq;

-- name: RotateWebhookSecret :one
-- Gives a webhook a new signing secret; the one it had goes on signing
-- beside it until @grace_seconds from now (0: it stops at once), by the
-- database's clock.
UPDATE webhooks
SET previous_secret = secret,
    previous_secret_until = coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @grace_seconds::float8),
    secret = @new_secret::text,
    updated_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE project_id = @project_id AND id = @id
RETURNING *;
