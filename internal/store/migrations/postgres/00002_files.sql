-- +goose Up
CREATE TABLE files (
    key           TEXT COLLATE "C" PRIMARY KEY,
    owner_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    size          BIGINT NOT NULL,
    checksum      TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    original_name TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT
);
CREATE INDEX files_owner_key ON files (owner_id, key);
CREATE INDEX files_expires ON files (expires_at) WHERE expires_at IS NOT NULL;

-- +goose Down
DROP TABLE files;
