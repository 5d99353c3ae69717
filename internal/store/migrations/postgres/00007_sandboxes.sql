-- +goose Up
-- Persistent agent sandboxes (docs/spec.md §9). The box itself (a workspace and, on Docker, a
-- container) is the runner's; node names the server that holds it.
CREATE TABLE sandboxes (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    runner          TEXT NOT NULL,
    node            TEXT NOT NULL,
    limits          TEXT NOT NULL,
    idle_timeout_ms BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    last_active_at  BIGINT NOT NULL
);
CREATE INDEX sandboxes_owner ON sandboxes (owner_id, created_at);

-- +goose Down
DROP TABLE sandboxes;
