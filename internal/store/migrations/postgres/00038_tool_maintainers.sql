-- +goose Up
-- Issue 33: several authors per tool. A tool's maintainers may edit it as its author does
-- (catalog.Maintains); the author is always one, so every tool gets its author's row here
-- and a new tool gets it when it is created. tool_edit_locks is the editor's soft lock:
-- who has a tool's editor open, since when, and when their page last said it still is
-- (seen_at); a lock not seen for catalog.EditLockTTL is free. It is in the database so
-- every API node sees the same one.
CREATE TABLE tool_maintainers (
    tool_id  TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    added_by TEXT NOT NULL DEFAULT '',
    added_at BIGINT NOT NULL,
    PRIMARY KEY (tool_id, user_id)
);
CREATE INDEX tool_maintainers_user ON tool_maintainers (user_id);
INSERT INTO tool_maintainers (tool_id, user_id, added_by, added_at)
    SELECT id, author_id, author_id, created_at FROM tools;

CREATE TABLE tool_edit_locks (
    tool_id TEXT PRIMARY KEY REFERENCES tools (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    since   BIGINT NOT NULL,
    seen_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE tool_edit_locks;
DROP TABLE tool_maintainers;
