-- +goose Up
-- Resumable uploads (tus, docs/api.md "Resumable uploads"). An upload reserves its whole
-- length against the owner's quota and the store's total from its creation; its bytes
-- arrive as parts, each a blob of its own, and become a staged file when the last one
-- is in. A finished upload's row stays until it expires, so a client that lost the last
-- answer can still ask what became of it.
CREATE TABLE uploads (
    id              TEXT COLLATE "C" PRIMARY KEY,
    owner_id        TEXT NOT NULL,
    key             TEXT NOT NULL,
    name            TEXT NOT NULL,
    content_type    TEXT NOT NULL,
    ttl_ms          BIGINT NOT NULL,
    size            BIGINT NOT NULL,
    received        BIGINT NOT NULL DEFAULT 0,
    parts           BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    finishing_until BIGINT NOT NULL DEFAULT 0,
    finished_at     BIGINT,
    -- The lock of tus requests on the upload (package resumable): who holds it, until
    -- when unless renewed, and since when another request wants it.
    lock_holder     TEXT NOT NULL DEFAULT '',
    lock_until      BIGINT NOT NULL DEFAULT 0,
    lock_wanted     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX uploads_owner ON uploads (owner_id);
CREATE INDEX uploads_expires ON uploads (expires_at);

CREATE TABLE upload_parts (
    upload_id TEXT NOT NULL,
    start     BIGINT NOT NULL,
    size      BIGINT NOT NULL,
    blob_key  TEXT NOT NULL,
    checksum  TEXT NOT NULL,
    PRIMARY KEY (upload_id, start)
);

-- +goose Down
DROP TABLE upload_parts;
DROP TABLE uploads;
