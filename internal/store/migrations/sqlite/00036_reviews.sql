-- +goose NO TRANSACTION
-- +goose Up
-- Review before publishing (docs/authoring.md "Review before publishing"): a new role,
-- reviewer, between author and admin; and the reviews an author asks for, one row per
-- submission of a version. SQLite cannot change a CHECK constraint in place, so the
-- users table is rebuilt (sqlite.org/lang_altertable.html, "other kinds of table schema
-- changes"): with foreign keys off, or dropping the old table would cascade into every
-- table that references it. goose runs a migration without a transaction on one
-- connection, so the pragma and the transaction below hold for all of it.
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE users_new (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    role          TEXT NOT NULL CHECK (role IN ('admin', 'reviewer', 'author', 'user')),
    password_hash TEXT,
    created_at    INTEGER NOT NULL,
    state         TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled', 'deleted')),
    oidc_issuer   TEXT,
    oidc_subject  TEXT
);
INSERT INTO users_new (id, name, role, password_hash, created_at, state, oidc_issuer, oidc_subject)
    SELECT id, name, role, password_hash, created_at, state, oidc_issuer, oidc_subject FROM users;
DROP TABLE users;
ALTER TABLE users_new RENAME TO users;
CREATE UNIQUE INDEX users_oidc ON users (oidc_issuer, oidc_subject) WHERE oidc_issuer IS NOT NULL;

-- A review: an author (submitted_by) asks for version_id of tool_id to be published,
-- with a note; a reviewer or an admin (decided_by) approves it, which publishes that
-- version, or asks for changes with a comment. status is pending, approved,
-- changes_requested, or superseded (the author submitted another version of the tool
-- while this one waited). A tool has at most one pending review.
CREATE TABLE reviews (
    id            TEXT PRIMARY KEY,
    tool_id       TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    version_id    TEXT NOT NULL REFERENCES tool_versions (id) ON DELETE CASCADE,
    submitted_by  TEXT NOT NULL,
    note          TEXT NOT NULL DEFAULT '',
    submitted_at  INTEGER NOT NULL,
    status        TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'changes_requested', 'superseded')),
    decided_by    TEXT NOT NULL DEFAULT '',
    decided_at    INTEGER,
    comment       TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX reviews_pending ON reviews (tool_id) WHERE status = 'pending';
CREATE INDEX reviews_status ON reviews (status, id);
CREATE INDEX reviews_version ON reviews (version_id, id);
COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
DROP TABLE reviews;
