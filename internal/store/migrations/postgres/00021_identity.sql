-- +goose Up
-- People (SPEC §2): a user is active, disabled (signs in nowhere) or deleted (a
-- tombstone that keeps the tools they authored attributed to "borttagen användare"); a
-- user may be bound to a sign-on identity (issuer, subject).
ALTER TABLE users ADD COLUMN state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled', 'deleted'));
ALTER TABLE users ADD COLUMN oidc_issuer TEXT COLLATE "C";
ALTER TABLE users ADD COLUMN oidc_subject TEXT COLLATE "C";
CREATE UNIQUE INDEX users_oidc ON users (oidc_issuer, oidc_subject) WHERE oidc_issuer IS NOT NULL;

-- Tokens have a scope ('all', or a comma-separated subset of files, runs, sandboxes,
-- read), an optional expiry and the time they were last used. A revoked token's row is
-- deleted.
ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'all';
ALTER TABLE tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE tokens ADD COLUMN last_used_at BIGINT;

-- Browser sign-ins get an id a user can see, the time last seen (idle expiry) and where
-- they came from.
ALTER TABLE web_sessions ADD COLUMN id TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE web_sessions ADD COLUMN last_seen_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE web_sessions ADD COLUMN address TEXT NOT NULL DEFAULT '';
ALTER TABLE web_sessions ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
UPDATE web_sessions SET id = substr(hash, 1, 20), last_seen_at = created_at;
CREATE INDEX web_sessions_user ON web_sessions (user_id);

-- Admin and security events, kept for SKRIP_AUDIT_RETENTION. actor and target are names
-- as they were at the time, so a deleted user's events still read.
CREATE TABLE audit (
    id         TEXT COLLATE "C" PRIMARY KEY,
    at         BIGINT NOT NULL,
    actor_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    actor      TEXT NOT NULL DEFAULT '',
    action     TEXT NOT NULL,
    target     TEXT NOT NULL DEFAULT '',
    address    TEXT NOT NULL DEFAULT '',
    details    TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_at ON audit (at, id);

-- Invitations: an expiring link (only its hash stored) where the invitee picks a name
-- and a password.
CREATE TABLE invitations (
    id          TEXT COLLATE "C" PRIMARY KEY,
    hash        TEXT COLLATE "C" NOT NULL UNIQUE,
    role        TEXT NOT NULL,
    created_by  TEXT COLLATE "C" NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    used_at     BIGINT,
    used_by     TEXT COLLATE "C"
);

-- CLI logins (a device authorization grant): the CLI holds the device code (only its
-- hash stored), the user approves the short user code on a page; the CLI's next poll
-- receives a token.
CREATE TABLE cli_logins (
    id           TEXT COLLATE "C" PRIMARY KEY,
    device_hash  TEXT COLLATE "C" NOT NULL UNIQUE,
    user_code    TEXT COLLATE "C" NOT NULL UNIQUE,
    token_name   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    approved_by  TEXT COLLATE "C",
    denied       INTEGER NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE cli_logins;
DROP TABLE invitations;
DROP TABLE audit;
DROP INDEX web_sessions_user;
ALTER TABLE web_sessions DROP COLUMN user_agent;
ALTER TABLE web_sessions DROP COLUMN address;
ALTER TABLE web_sessions DROP COLUMN last_seen_at;
ALTER TABLE web_sessions DROP COLUMN id;
ALTER TABLE tokens DROP COLUMN last_used_at;
ALTER TABLE tokens DROP COLUMN expires_at;
ALTER TABLE tokens DROP COLUMN scope;
DROP INDEX users_oidc;
ALTER TABLE users DROP COLUMN oidc_subject;
ALTER TABLE users DROP COLUMN oidc_issuer;
ALTER TABLE users DROP COLUMN state;
