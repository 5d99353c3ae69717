-- +goose Up
-- How many times a run was claimed to execute, and by which node the last time. A run's
-- result is recorded only for its current attempt, so that a late result from an earlier
-- attempt changes nothing. Runs from before this migration have 0 and ''.
ALTER TABLE runs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN worker TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runs DROP COLUMN worker;
ALTER TABLE runs DROP COLUMN attempts;
