-- +goose Up
-- What an action run does to its session when it succeeds: it moves the session from
-- expected_rev to expected_rev+1. The node that records the run reads it here, not from
-- whoever executed it. cancel_requested is set when a user cancels a running run, so that
-- the node executing it stops it however the request reached it, and a claim after it
-- cancels instead. Runs from before this migration have NULL and 0.
ALTER TABLE runs ADD COLUMN expected_rev INTEGER;
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN cancel_requested;
ALTER TABLE runs DROP COLUMN expected_rev;
