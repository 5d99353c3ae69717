-- +goose Up
-- The label of the next action an action run was taken from ("Konvertera till PDF"), kept
-- when the action is submitted so that lists of runs name the step as the user saw it.
-- Runs from before this migration have '' and are named by their action_id.
ALTER TABLE runs ADD COLUMN action_label TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runs DROP COLUMN action_label;
