-- +goose Up
-- Issue 33's versions. A version's note says what changed (optional). Its number counts a
-- tool's versions 1, 2, 3… in the order they were made; existing versions are numbered by
-- (created_at, id), the order the editor listed them in. Each tool's numbers are unique,
-- so two saves at once cannot take the same one.
ALTER TABLE tool_versions ADD COLUMN note TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_versions ADD COLUMN number INTEGER NOT NULL DEFAULT 0;
UPDATE tool_versions SET number = (
    SELECT COUNT(*) FROM tool_versions o
    WHERE o.tool_id = tool_versions.tool_id
      AND (o.created_at < tool_versions.created_at OR (o.created_at = tool_versions.created_at AND o.id <= tool_versions.id)));
CREATE UNIQUE INDEX tool_versions_number ON tool_versions (tool_id, number);

-- A version's latest sandbox run (context 'sandbox:{version_id}'), for the versions list.
CREATE INDEX runs_tool_context ON runs (tool_id, context, created_at);

-- +goose Down
DROP INDEX runs_tool_context;
DROP INDEX tool_versions_number;
ALTER TABLE tool_versions DROP COLUMN number;
ALTER TABLE tool_versions DROP COLUMN note;
