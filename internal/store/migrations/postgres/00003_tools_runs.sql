-- +goose Up
CREATE TABLE tools (
    id                   TEXT PRIMARY KEY,
    slug                 TEXT NOT NULL UNIQUE,
    title                TEXT NOT NULL,
    description          TEXT NOT NULL DEFAULT '',
    author_id            TEXT NOT NULL REFERENCES users (id),
    published_version_id TEXT,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL
);

CREATE TABLE tool_versions (
    id         TEXT PRIMARY KEY,
    tool_id    TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    source     TEXT NOT NULL,
    entrypoint TEXT NOT NULL,
    created_by TEXT NOT NULL REFERENCES users (id),
    created_at BIGINT NOT NULL
);
CREATE INDEX tool_versions_tool ON tool_versions (tool_id, created_at);

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    tool_id          TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    version_id       TEXT NOT NULL REFERENCES tool_versions (id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    context          TEXT NOT NULL,
    kind             TEXT NOT NULL,
    action_id        TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL,
    error_summary    TEXT NOT NULL DEFAULT '',
    inputs           TEXT NOT NULL DEFAULT '{}',
    outputs          TEXT NOT NULL DEFAULT '[]',
    next_actions     TEXT NOT NULL DEFAULT '[]',
    artifacts        TEXT NOT NULL DEFAULT '[]',
    input_manifest   TEXT NOT NULL DEFAULT '{"files":[]}',
    state_rev        BIGINT,
    stdout           BYTEA,
    stderr           BYTEA,
    stdout_truncated BOOLEAN NOT NULL DEFAULT FALSE,
    stderr_truncated BOOLEAN NOT NULL DEFAULT FALSE,
    created_at       BIGINT NOT NULL,
    started_at       BIGINT,
    finished_at      BIGINT
);
CREATE INDEX runs_user_created ON runs (user_id, created_at);
CREATE INDEX runs_status ON runs (status);

-- +goose Down
DROP TABLE runs;
DROP TABLE tool_versions;
DROP TABLE tools;
