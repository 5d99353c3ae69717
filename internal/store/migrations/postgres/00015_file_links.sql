-- +goose Up
-- Share links of staged files (docs/api.md "Share links"). Only the SHA-256 of a link's
-- token is kept. A link belongs to its file's row: deleting the file (the API, its TTL)
-- deletes its links, and overwriting the key keeps them, so they serve the new version.
CREATE TABLE file_links (
    id            TEXT COLLATE "C" PRIMARY KEY,
    token_hash    TEXT COLLATE "C" NOT NULL UNIQUE,
    owner_id      TEXT NOT NULL,
    key           TEXT COLLATE "C" NOT NULL,
    created_by    TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    max_downloads BIGINT,
    downloads     BIGINT NOT NULL DEFAULT 0,
    FOREIGN KEY (owner_id, key) REFERENCES files (owner_id, key) ON DELETE CASCADE
);
CREATE INDEX file_links_file ON file_links (owner_id, key);
CREATE INDEX file_links_expires ON file_links (expires_at);

-- +goose Down
DROP TABLE file_links;
