-- +goose Up
-- Browser sign-ins: the cookie holds the secret, the table only its hash.
CREATE TABLE web_sessions (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at);

-- +goose Down
DROP TABLE web_sessions;
