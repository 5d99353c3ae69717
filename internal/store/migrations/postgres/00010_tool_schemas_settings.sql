-- +goose Up
-- docs/spec.md §5b: what a tool says about itself, the inputs and settings each version takes,
-- and each user's saved settings per tool (scope '' for production, 'sandbox:{version_id}'
-- for the editor sandbox's own values).
ALTER TABLE tools ADD COLUMN summary TEXT NOT NULL DEFAULT '';
ALTER TABLE tools ADD COLUMN usage_instructions TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_versions ADD COLUMN input_schema TEXT;
ALTER TABLE tool_versions ADD COLUMN settings_schema TEXT;

CREATE TABLE tool_settings (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tool_id    TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    scope      TEXT NOT NULL,
    vals       TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, tool_id, scope)
);

-- +goose Down
DROP TABLE tool_settings;
ALTER TABLE tool_versions DROP COLUMN settings_schema;
ALTER TABLE tool_versions DROP COLUMN input_schema;
ALTER TABLE tools DROP COLUMN usage_instructions;
ALTER TABLE tools DROP COLUMN summary;
