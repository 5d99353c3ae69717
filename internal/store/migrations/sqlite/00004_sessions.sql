-- +goose Up
CREATE TABLE tool_sessions (
    tool_id       TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    context       TEXT NOT NULL,
    state         TEXT NOT NULL,
    state_rev     INTEGER NOT NULL,
    latest_run_id TEXT NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (tool_id, user_id, context)
);

-- The current set of session files of a (tool, user, context); the bytes live in the blob
-- store under sessions/{tool_id}/{user_id}/{hex context}/{set_id}/, the names here.
CREATE TABLE session_files (
    tool_id          TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    context          TEXT NOT NULL,
    set_id           TEXT NOT NULL,
    files            TEXT NOT NULL,
    bytes            INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    last_accessed_at INTEGER NOT NULL,
    PRIMARY KEY (tool_id, user_id, context)
);
CREATE INDEX session_files_accessed ON session_files (last_accessed_at);

-- +goose Down
DROP TABLE session_files;
DROP TABLE tool_sessions;
