-- A spent budget whose budget_exhausted request was closed by an answer in
-- words (which attention refuses since this migration's release) kept
-- pointing at that closed request: the sweeper opens a request only for a
-- spent budget without one, so nobody was asked again and the subtree
-- stayed stopped. Forget every closed request a budget points at; the
-- sweeper then asks again for each budget that is still spent on an open
-- item (lease.AskSpentBudgets), and a budget no longer spent needs none.
-- +goose Up
UPDATE budgets b
SET request_id = NULL
FROM attention_requests r
WHERE r.project_id = b.project_id AND r.id = b.request_id AND r.state <> 'open';

-- +goose Down
-- Nothing to undo: a budget without a request is what a raised or new one
-- has.
SELECT 1;
