-- +goose Up
-- Fair queueing (docs/cluster.md "Fairness"). In cluster mode a run waits in the
-- database, not on the stream: dispatch holds its queue message (the job, its files by
-- checksum) until the one scheduler of the cluster sends it to the workers, choosing
-- users in turn, and dispatched_at says when it did. '' and NULL on runs of one node.
-- The index serves the count of a user's queued and running runs (SKRIP_RUNS_PER_USER).
ALTER TABLE runs ADD COLUMN dispatch TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN dispatched_at BIGINT;
CREATE INDEX runs_user_status ON runs (user_id, status);

-- +goose Down
DROP INDEX runs_user_status;
ALTER TABLE runs DROP COLUMN dispatched_at;
ALTER TABLE runs DROP COLUMN dispatch;
