package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// FileLink is a share link of a staged file: whoever holds its token may download the
// file (OwnerID, Key) until ExpiresAt, MaxDownloads times at most. Only the SHA-256 of the
// token is stored.
type FileLink struct {
	ID           string
	TokenHash    string
	OwnerID      string
	Key          string
	CreatedBy    string // the user who made it: the owner, or an admin
	CreatedAt    time.Time
	ExpiresAt    time.Time
	MaxDownloads *int64 // nil: no limit
	Downloads    int64  // the requests that read the file from its first byte
	BytesServed  int64  // body bytes reserved by requests, less those they did not send
}

const linkCols = "id, token_hash, owner_id, key, created_by, created_at, expires_at, max_downloads, downloads, bytes_served"

func scanLink(row interface{ Scan(...any) error }) (FileLink, error) {
	var l FileLink
	var created, expires int64
	var maxDl sql.NullInt64
	if err := row.Scan(&l.ID, &l.TokenHash, &l.OwnerID, &l.Key, &l.CreatedBy, &created, &expires, &maxDl, &l.Downloads, &l.BytesServed); err != nil {
		return FileLink{}, mapErr(err)
	}
	l.CreatedAt, l.ExpiresAt = fromMS(created), fromMS(expires)
	if maxDl.Valid {
		l.MaxDownloads = &maxDl.Int64
	}
	return l, nil
}

// CreateFileLink stores l if its file is a committed entry of l.OwnerID's (an expired one
// included: the caller checks that it is live). No such file gives ErrNotFound.
func (s *Store) CreateFileLink(ctx context.Context, l FileLink) error {
	var maxDl any
	if l.MaxDownloads != nil {
		maxDl = *l.MaxDownloads
	}
	// One statement, so a file deleted meanwhile leaves no row rather than failing on the
	// foreign key.
	res, err := s.exec(ctx, `INSERT INTO file_links (`+linkCols+`)
		SELECT ?, ?, owner_id, key, ?, ?, ?, ?, 0, 0 FROM files WHERE owner_id = ? AND key = ? AND checksum <> ''`,
		l.ID, l.TokenHash, l.CreatedBy, ms(l.CreatedAt), ms(l.ExpiresAt), maxDl, l.OwnerID, l.Key)
	if err != nil {
		return fmt.Errorf("creating a link of %q: %w", l.Key, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("creating a link of %q: %w", l.Key, ErrNotFound)
	}
	return nil
}

// FileLinks returns the links of ownerID's file under key that have not expired at now,
// the newest first.
func (s *Store) FileLinks(ctx context.Context, ownerID, key string, now time.Time) ([]FileLink, error) {
	rows, err := s.query(ctx, "SELECT "+linkCols+" FROM file_links WHERE owner_id = ? AND key = ? AND expires_at > ? ORDER BY created_at DESC, id DESC",
		ownerID, key, ms(now))
	return scanAll(rows, err, scanLink)
}

// FileLinkByToken returns the link whose token hashes to tokenHash, expired or not, if
// its owner is active.
func (s *Store) FileLinkByToken(ctx context.Context, tokenHash string) (FileLink, error) {
	// A link works only while its file's owner is active: a disabled user's links stop
	// with their tokens (SPEC §2).
	l, err := scanLink(s.queryRow(ctx, "SELECT "+linkCols+" FROM file_links WHERE token_hash = ? AND EXISTS (SELECT 1 FROM users u WHERE u.id = file_links.owner_id AND u.state = 'active')", tokenHash))
	if err != nil {
		return FileLink{}, fmt.Errorf("link: %w", err)
	}
	return l, nil
}

// ReserveFileLinkRead reserves n body bytes of a file of size bytes for a request
// through link id, and counts a download when download is set (the request reads from
// the first byte), if at now the link has not expired and, when it has a limit, the bytes
// fit in max_downloads × size beside those served already and a download is left. It is
// one conditional UPDATE: of requests racing on several API nodes for the last bytes,
// only those that fit are counted. It reports whether this one was.
func (s *Store) ReserveFileLinkRead(ctx context.Context, id string, now time.Time, n, size int64, download bool) (bool, error) {
	dl := 0
	if download {
		dl = 1
	}
	res, err := s.exec(ctx, `UPDATE file_links SET bytes_served = bytes_served + ?, downloads = downloads + ?
		WHERE id = ? AND expires_at > ?
		AND (max_downloads IS NULL OR (bytes_served + ? <= max_downloads * ? AND (? = 0 OR downloads < max_downloads)))`,
		n, dl, id, ms(now), n, size, dl)
	if err != nil {
		return false, fmt.Errorf("reserving a read of link %s: %w", id, err)
	}
	k, _ := res.RowsAffected()
	return k == 1, nil
}

// ReturnFileLinkRead gives back n reserved bytes that a request did not send, and its
// download when download is set (it sent nothing).
func (s *Store) ReturnFileLinkRead(ctx context.Context, id string, n int64, download bool) error {
	dl := 0
	if download {
		dl = 1
	}
	_, err := s.exec(ctx, `UPDATE file_links SET bytes_served = CASE WHEN bytes_served > ? THEN bytes_served - ? ELSE 0 END,
		downloads = CASE WHEN downloads > ? THEN downloads - ? ELSE 0 END WHERE id = ?`, n, n, dl, dl, id)
	if err != nil {
		return fmt.Errorf("giving back a read of link %s: %w", id, err)
	}
	return nil
}

// DeleteFileLink removes ownerID's link id (expired or not), and reports whether it
// was there.
func (s *Store) DeleteFileLink(ctx context.Context, ownerID, id string) (bool, error) {
	res, err := s.exec(ctx, "DELETE FROM file_links WHERE owner_id = ? AND id = ?", ownerID, id)
	if err != nil {
		return false, fmt.Errorf("deleting link %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// DeleteExpiredFileLinks removes every link that expired at or before now, and returns
// how many went.
func (s *Store) DeleteExpiredFileLinks(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM file_links WHERE expires_at <= ?", ms(now))
	if err != nil {
		return 0, fmt.Errorf("deleting expired links: %w", err)
	}
	return res.RowsAffected()
}
