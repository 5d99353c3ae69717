-- +goose Up
-- The client address (an IPv6 address by its /64) that started a CLI login, so that one
-- address can hold only a few pending logins (SKRIP_CLI_LOGINS_PER_ADDRESS), and the
-- index the pending counts and the janitor's sweep of expired logins use.
ALTER TABLE cli_logins ADD COLUMN address TEXT NOT NULL DEFAULT '';
CREATE INDEX cli_logins_address ON cli_logins (address, expires_at);
CREATE INDEX cli_logins_expires ON cli_logins (expires_at);

-- +goose Down
DROP INDEX cli_logins_expires;
DROP INDEX cli_logins_address;
ALTER TABLE cli_logins DROP COLUMN address;
