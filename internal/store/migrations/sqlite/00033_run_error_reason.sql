-- +goose Up
-- Why skrip failed a run, when it was skrip's side or a refusal of the user's input that
-- failed it: a JSON object {"code": ..., "params": {...}} (internal/run/reason.go), from
-- which the web says it in the page's language. error_summary keeps the English sentence
-- for the API, the CLI and the log. NULL for a run that did not fail, one the tool's
-- own message failed, and runs recorded before it (the page then says what their
-- error_source says).
ALTER TABLE runs ADD COLUMN error_reason TEXT;

-- +goose Down
ALTER TABLE runs DROP COLUMN error_reason;
