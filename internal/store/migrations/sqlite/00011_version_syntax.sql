-- +goose Up
-- Where Python's compiler stopped in a version's source, as the editor's syntax check
-- found it when the version was saved: '' and 0 when it compiled or was not checked.
ALTER TABLE tool_versions ADD COLUMN syntax_error TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_versions ADD COLUMN syntax_line INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE tool_versions DROP COLUMN syntax_line;
ALTER TABLE tool_versions DROP COLUMN syntax_error;
