-- +goose Up
-- The bytes of a replaced, deleted or expired file version stay readable for a while, so
-- a download that opened that version finishes whole; the janitor deletes them later.
CREATE TABLE retired_file_blobs (
    blob_key   TEXT COLLATE "C" PRIMARY KEY,
    size       BIGINT NOT NULL,
    retired_at BIGINT NOT NULL
);
CREATE INDEX retired_file_blobs_at ON retired_file_blobs (retired_at);

-- +goose Down
DROP TABLE retired_file_blobs;
