-- +goose Up
-- Everything a user makes counts against their quota (SPEC §12). A retired blob is
-- counted against the owner of the version it held until its bytes are deleted; blobs
-- retired before this migration have no owner ('') and count in the store's total only.
-- held_bytes is what a run holds in the store: its kept artifacts (reserved one by one
-- while they are stored) and, once recorded, its outputs and logs; the janitor sets it
-- to 0 when the run's artifacts expire.
ALTER TABLE retired_file_blobs ADD COLUMN owner_id TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE INDEX retired_file_blobs_owner ON retired_file_blobs (owner_id, retired_at);
ALTER TABLE runs ADD COLUMN held_bytes BIGINT NOT NULL DEFAULT 0;
CREATE INDEX runs_held ON runs (user_id) WHERE held_bytes > 0;
CREATE INDEX session_files_user ON session_files (user_id);

-- +goose Down
DROP INDEX session_files_user;
DROP INDEX runs_held;
ALTER TABLE runs DROP COLUMN held_bytes;
DROP INDEX retired_file_blobs_owner;
ALTER TABLE retired_file_blobs DROP COLUMN owner_id;
