-- +goose Up
-- A share link's max_downloads limits the bytes it serves (docs/api.md "Share links"): at
-- most max_downloads × the file's size in all, resumes included. bytes_served counts
-- what its requests reserved before sending, less what they did not send.
ALTER TABLE file_links ADD COLUMN bytes_served BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE file_links DROP COLUMN bytes_served;
