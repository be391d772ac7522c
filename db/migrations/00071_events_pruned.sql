-- +goose Up
-- The retention horizon of each project's events: the newest number the
-- retention service has deleted in the project (DeleteOldEvents raises it
-- in the statement that deletes). Event numbers are global, so a gap
-- between two numbers of a project says nothing; a reader resuming after
-- a number below pruned_through may have missed events that were
-- deleted, and is told so (events.ErrPruned) rather than given a silent
-- gap. Only ever raised. Events pruned before this migration are not
-- known: pruned_through starts at the project's first deletion after it.
CREATE TABLE events_pruned (
    project_id     uuid   NOT NULL PRIMARY KEY REFERENCES projects (id),
    pruned_through bigint NOT NULL CHECK (pruned_through > 0)
);

-- +goose Down
DROP TABLE events_pruned;
