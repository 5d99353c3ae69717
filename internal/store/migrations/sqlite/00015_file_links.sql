-- +goose Up
-- Share links of staged files (docs/api.md "Share links"). Only the SHA-256 of a link's
-- token is kept. A link belongs to its file's row: deleting the file (the API, its TTL)
-- deletes its links, and overwriting the key keeps them, so they serve the new version.
-- A later migration that rebuilds the files table must keep these rows by hand: with
-- foreign keys on, dropping files deletes them.
CREATE TABLE file_links (
    id            TEXT PRIMARY KEY,
    token_hash    TEXT NOT NULL UNIQUE,
    owner_id      TEXT NOT NULL,
    key           TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    max_downloads INTEGER,
    downloads     INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (owner_id, key) REFERENCES files (owner_id, key) ON DELETE CASCADE
);
CREATE INDEX file_links_file ON file_links (owner_id, key);
CREATE INDEX file_links_expires ON file_links (expires_at);

-- +goose Down
DROP TABLE file_links;
