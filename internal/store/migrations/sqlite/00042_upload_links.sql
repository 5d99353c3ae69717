-- +goose Up
-- Upload links (docs/api.md "Upload links"): whoever holds a link's token may upload a
-- file to one key of its owner's, up to max_bytes, of the allowed types, uses times.
-- Only the SHA-256 of the token is kept. A link goes with its owner.
CREATE TABLE upload_links (
    id            TEXT PRIMARY KEY,
    token_hash    TEXT NOT NULL UNIQUE,
    owner_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key           TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    max_bytes     INTEGER NOT NULL,
    content_types TEXT NOT NULL DEFAULT '[]',
    uses          INTEGER NOT NULL,
    used          INTEGER NOT NULL DEFAULT 0,
    -- While an upload streams through the link, until when no other may (ms): one at
    -- a time, so that uploads racing each other never see the same room in the quota.
    busy_until    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX upload_links_owner ON upload_links (owner_id, created_at);
CREATE INDEX upload_links_expires ON upload_links (expires_at);

-- +goose Down
DROP TABLE upload_links;
