-- +goose Up
-- The bytes of a replaced, deleted or expired file version stay readable for a while, so
-- a download that opened that version finishes whole; the janitor deletes them later.
CREATE TABLE retired_file_blobs (
    blob_key   TEXT PRIMARY KEY,
    size       INTEGER NOT NULL,
    retired_at INTEGER NOT NULL
);
CREATE INDEX retired_file_blobs_at ON retired_file_blobs (retired_at);

-- +goose Down
DROP TABLE retired_file_blobs;
