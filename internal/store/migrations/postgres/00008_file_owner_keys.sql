-- +goose Up
-- Keys are a per-owner namespace (docs/spec.md §4): two users may each have files/report.csv.
ALTER TABLE files DROP CONSTRAINT files_pkey;
ALTER TABLE files ADD PRIMARY KEY (owner_id, key);
DROP INDEX files_owner_key;

-- +goose Down
-- Going back needs every key to be held by one owner at most.
CREATE INDEX files_owner_key ON files (owner_id, key);
ALTER TABLE files DROP CONSTRAINT files_pkey;
ALTER TABLE files ADD PRIMARY KEY (key);
