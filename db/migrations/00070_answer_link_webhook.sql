-- +goose Up
-- An answer link is bound to the webhook that sent it and to the
-- recipient it was made out to: it answers only while that webhook exists
-- and still names that recipient (UseAnswerLink checks both in the
-- statement that spends the link). Deleting the webhook, or changing its
-- recipient, revokes the links it sent.
--
-- webhook_id NULL: a link issued before this migration, when links were
-- not bound. Such a link answers only while some webhook of its project
-- still names its recipient.
ALTER TABLE answer_links ADD COLUMN webhook_id uuid;

-- +goose Down
ALTER TABLE answer_links DROP COLUMN webhook_id;
