-- +goose Up
-- Each upload's bytes get a blob key of their own, never reused, so replacing, deleting
-- and expiring a file act on exactly the version they saw. Existing files keep theirs.
ALTER TABLE files ADD COLUMN blob_key TEXT NOT NULL DEFAULT '';
UPDATE files SET blob_key = key WHERE checksum <> '';

-- +goose Down
ALTER TABLE files DROP COLUMN blob_key;
