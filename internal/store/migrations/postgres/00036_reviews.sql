-- +goose Up
-- Review before publishing (docs/authoring.md "Review before publishing"): a new role,
-- reviewer, between author and admin; and the reviews an author asks for, one row per
-- submission of a version.
ALTER TABLE users DROP CONSTRAINT IF EXISTS users_role_check;
ALTER TABLE users ADD CONSTRAINT users_role_check CHECK (role IN ('admin', 'reviewer', 'author', 'user'));

-- A review: an author (submitted_by) asks for version_id of tool_id to be published,
-- with a note; a reviewer or an admin (decided_by) approves it, which publishes that
-- version, or asks for changes with a comment. status is pending, approved,
-- changes_requested, or superseded (the author submitted another version of the tool
-- while this one waited). A tool has at most one pending review.
CREATE TABLE reviews (
    id            TEXT COLLATE "C" PRIMARY KEY,
    tool_id       TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    version_id    TEXT NOT NULL REFERENCES tool_versions (id) ON DELETE CASCADE,
    submitted_by  TEXT NOT NULL,
    note          TEXT NOT NULL DEFAULT '',
    submitted_at  BIGINT NOT NULL,
    status        TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'changes_requested', 'superseded')),
    decided_by    TEXT NOT NULL DEFAULT '',
    decided_at    BIGINT,
    comment       TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX reviews_pending ON reviews (tool_id) WHERE status = 'pending';
CREATE INDEX reviews_status ON reviews (status, id);
CREATE INDEX reviews_version ON reviews (version_id, id);

-- +goose Down
DROP TABLE reviews;
ALTER TABLE users DROP CONSTRAINT IF EXISTS users_role_check;
ALTER TABLE users ADD CONSTRAINT users_role_check CHECK (role IN ('admin', 'author', 'user'));
