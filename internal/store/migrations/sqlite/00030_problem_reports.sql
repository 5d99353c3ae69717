-- +goose Up
-- Problem reports (docs/api.md "Problem reports"): a run's owner tells the tool's
-- maintainers that the run went wrong. One report per run. A report goes with its run
-- (deleting the user deletes their runs), its reporter and its tool. The run's error
-- summary, status and input manifest are read from the run, not copied.
CREATE TABLE problem_reports (
    id          TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL UNIQUE REFERENCES runs (id) ON DELETE CASCADE,
    tool_id     TEXT NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    version_id  TEXT NOT NULL,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    message     TEXT NOT NULL DEFAULT '',
    share_files INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL DEFAULT 'open',
    created_at  INTEGER NOT NULL,
    closed_at   INTEGER,
    closed_by   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX problem_reports_tool ON problem_reports (tool_id, id);
CREATE INDEX problem_reports_user ON problem_reports (user_id, created_at);

-- +goose Down
DROP TABLE problem_reports;
