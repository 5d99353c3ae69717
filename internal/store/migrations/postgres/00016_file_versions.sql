-- +goose Up
-- Previous versions of staged files (docs/api.md "Versions"). With SKRIP_FILES_VERSIONS
-- above 0, overwriting a key moves the replaced version here instead of retiring its
-- bytes; seq orders a key's versions, the newest highest. Every version has an id the
-- API names, the current one (files.version_id) included: it keeps its id when it is
-- replaced. Files from before this migration get an id here. A version belongs to its
-- file's row: deleting the file deletes its versions (skrip retires their bytes first).
ALTER TABLE files ADD COLUMN version_id TEXT COLLATE "C" NOT NULL DEFAULT '';
UPDATE files SET version_id = 'v_' || md5(random()::text || owner_id || key) WHERE checksum <> '';
CREATE TABLE file_versions (
    seq           BIGSERIAL PRIMARY KEY,
    id            TEXT COLLATE "C" NOT NULL UNIQUE,
    owner_id      TEXT NOT NULL,
    key           TEXT COLLATE "C" NOT NULL,
    size          BIGINT NOT NULL,
    checksum      TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    original_name TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    replaced_at   BIGINT NOT NULL,
    blob_key      TEXT COLLATE "C" NOT NULL UNIQUE,
    FOREIGN KEY (owner_id, key) REFERENCES files (owner_id, key) ON DELETE CASCADE
);
CREATE INDEX file_versions_file ON file_versions (owner_id, key, seq);

-- +goose Down
DROP TABLE file_versions;
ALTER TABLE files DROP COLUMN version_id;
