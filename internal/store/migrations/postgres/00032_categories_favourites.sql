-- +goose Up
-- Issue 32's home page. Categories an admin manages (approved = 1), or an author proposed
-- for a tool and an admin has not approved yet (approved = 0); the categories of each tool;
-- each user's favourite tools. Deleting a tool, a category or a user takes their links
-- with them. Recently used tools need no table: runs_user_context_tool serves them.
CREATE TABLE categories (
    id          TEXT PRIMARY KEY,
    slug        TEXT COLLATE "C" NOT NULL UNIQUE,
    title       TEXT NOT NULL,
    approved    INTEGER NOT NULL DEFAULT 0,
    proposed_by TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL
);

CREATE TABLE tool_categories (
    tool_id     TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    category_id TEXT NOT NULL REFERENCES categories (id) ON DELETE CASCADE,
    PRIMARY KEY (tool_id, category_id)
);
CREATE INDEX tool_categories_category ON tool_categories (category_id);

CREATE TABLE favourites (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tool_id    TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, tool_id)
);
CREATE INDEX favourites_tool ON favourites (tool_id);

CREATE INDEX runs_user_context_tool ON runs (user_id, context, tool_id, created_at);

-- +goose Down
DROP INDEX runs_user_context_tool;
DROP TABLE favourites;
DROP TABLE tool_categories;
DROP TABLE categories;
