-- +goose Up
-- Where Python's compiler stopped in a version's source, as the editor's syntax check
-- found it when the version was saved: '' and 0 when it compiled or was not checked.
ALTER TABLE tool_versions ADD COLUMN syntax_error TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_versions ADD COLUMN syntax_line INTEGER NOT NULL DEFAULT 0;

-- The steps of an editor sandbox session: the state each revision held and the run
-- whose next actions it offered, so the author can go back to one. The newest few of
-- each session are kept.
CREATE TABLE session_steps (
    tool_id    TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    context    TEXT NOT NULL,
    state_rev  BIGINT NOT NULL,
    state      TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tool_id, user_id, context, state_rev),
    FOREIGN KEY (tool_id, user_id, context) REFERENCES tool_sessions (tool_id, user_id, context) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE session_steps;
ALTER TABLE tool_versions DROP COLUMN syntax_line;
ALTER TABLE tool_versions DROP COLUMN syntax_error;
