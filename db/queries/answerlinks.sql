-- name: NotificationSettings :one
-- A project's notification settings (the defaults when it has no row).
SELECT coalesce(max(n.answer_links::int), 0) = 1 AS answer_links,
       coalesce(max(n.answer_link_ttl_s), 86400)::int AS answer_link_ttl_s
FROM notification_settings n WHERE n.project_id = @project_id;

-- name: SetNotificationSettings :one
INSERT INTO notification_settings (project_id, answer_links, answer_link_ttl_s)
VALUES (@project_id, @answer_links, @answer_link_ttl_s)
ON CONFLICT (project_id) DO UPDATE SET answer_links = excluded.answer_links, answer_link_ttl_s = excluded.answer_link_ttl_s
RETURNING answer_links, answer_link_ttl_s;

-- name: CreateAnswerLink :one
-- A link for one request and one recipient, sent by one webhook, valid
-- for ttl by the database's clock.
INSERT INTO answer_links (project_id, attention_id, webhook_id, recipient, secret_hash, created_at, expires_at)
VALUES (@project_id, @attention_id, @webhook_id::uuid, @recipient, @secret_hash,
        coalesce(sqlc.narg('now')::timestamptz, now()),
        coalesce(sqlc.narg('now')::timestamptz, now()) + make_interval(secs => @ttl_seconds::float8))
RETURNING *;

-- name: GetAnswerLink :one
-- A link by id, with whether it may still be used now (the database's
-- clock), whether its project has answer links turned on (links_on: no
-- link answers while they are off), and what became of the webhook that
-- sent it (webhook_state: 'ok'; 'deleted'; 'recipient_changed': it names
-- another recipient now). UseAnswerLink holds the same rule.
SELECT l.*, (l.used_at IS NULL AND l.expires_at > coalesce(sqlc.narg('now')::timestamptz, now()))::boolean AS usable,
       coalesce((SELECT n.answer_links FROM notification_settings n WHERE n.project_id = l.project_id), false)::boolean AS links_on,
       CASE
           WHEN EXISTS (SELECT 1 FROM webhooks w WHERE w.project_id = l.project_id
                        AND (w.id = l.webhook_id OR l.webhook_id IS NULL) AND w.recipient = l.recipient) THEN 'ok'
           WHEN l.webhook_id IS NOT NULL AND EXISTS (SELECT 1 FROM webhooks w WHERE w.project_id = l.project_id AND w.id = l.webhook_id)
               THEN 'recipient_changed'
           ELSE 'deleted' END::text AS webhook_state
FROM answer_links l
WHERE l.project_id = @project_id AND l.id = @id;

-- name: UseAnswerLink :one
-- Spends a link: only an unused, unexpired link whose secret matches, of a
-- project that has answer links turned on, whose webhook still exists and
-- still names the link's recipient (a link issued before links were bound
-- to their webhook, webhook_id NULL: some webhook of the project names
-- it), in the statement that marks it used (no row: refused). The
-- webhook's row is read with FOR SHARE, so a deletion or a change of
-- recipient committing meanwhile is waited for and seen.
UPDATE answer_links l SET used_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE l.project_id = @project_id AND l.id = @id AND l.secret_hash = @secret_hash
  AND l.used_at IS NULL AND l.expires_at > coalesce(sqlc.narg('now')::timestamptz, now())
  AND EXISTS (SELECT 1 FROM notification_settings n WHERE n.project_id = l.project_id AND n.answer_links)
  AND EXISTS (SELECT 1 FROM webhooks w WHERE w.project_id = l.project_id
              AND (w.id = l.webhook_id OR l.webhook_id IS NULL) AND w.recipient = l.recipient
              FOR SHARE)
RETURNING l.*;

-- name: ProjectsWithOldAnswerLinks :many
-- The projects with an answer link that expired more than @keep_ms before
-- now (retention): links are spent or dead by then, and the answer a link
-- gave is recorded on its request.
SELECT p.id FROM projects p
WHERE EXISTS (
    SELECT 1 FROM answer_links l
    WHERE l.project_id = p.id
      AND l.expires_at < coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
                         - sqlc.arg('keep_ms')::bigint * interval '1 millisecond'
)
ORDER BY p.id;

-- name: DeleteOldAnswerLinks :execrows
-- Retention: deletes up to @max_rows of a project's answer links that
-- expired more than @keep_ms before now (the database clock, or a test's
-- stub), oldest first. A link that can still be used is never deleted.
WITH old AS (
    SELECT l.id FROM answer_links l
    WHERE l.project_id = @project_id::uuid
      AND l.expires_at < coalesce(sqlc.narg('now')::timestamptz, statement_timestamp())
                         - sqlc.arg('keep_ms')::bigint * interval '1 millisecond'
    ORDER BY l.expires_at
    LIMIT @max_rows
)
DELETE FROM answer_links l
USING old
WHERE l.project_id = @project_id::uuid AND l.id = old.id;
