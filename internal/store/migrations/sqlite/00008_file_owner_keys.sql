-- +goose Up
-- Keys are a per-owner namespace (docs/spec.md §4): two users may each have files/report.csv.
-- SQLite cannot change a primary key in place, so the table is rebuilt.
CREATE TABLE files_by_owner (
    owner_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key           TEXT NOT NULL,
    size          INTEGER NOT NULL,
    checksum      TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    original_name TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER,
    blob_key      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (owner_id, key)
);
INSERT INTO files_by_owner (owner_id, key, size, checksum, content_type, original_name, created_at, expires_at, blob_key)
    SELECT owner_id, key, size, checksum, content_type, original_name, created_at, expires_at, blob_key FROM files;
DROP TABLE files;
ALTER TABLE files_by_owner RENAME TO files;
CREATE INDEX files_expires ON files (expires_at) WHERE expires_at IS NOT NULL;

-- +goose Down
-- Going back needs every key to be held by one owner at most.
CREATE TABLE files_by_key (
    key           TEXT PRIMARY KEY,
    owner_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    size          INTEGER NOT NULL,
    checksum      TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    original_name TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER,
    blob_key      TEXT NOT NULL DEFAULT ''
);
INSERT INTO files_by_key (key, owner_id, size, checksum, content_type, original_name, created_at, expires_at, blob_key)
    SELECT key, owner_id, size, checksum, content_type, original_name, created_at, expires_at, blob_key FROM files;
DROP TABLE files;
ALTER TABLE files_by_key RENAME TO files;
CREATE INDEX files_owner_key ON files (owner_id, key);
CREATE INDEX files_expires ON files (expires_at) WHERE expires_at IS NOT NULL;
