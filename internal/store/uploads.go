package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Upload is a resumable upload: a staged file whose bytes arrive in parts, over as many
// requests as the client needs, from any API node. Its whole Size is reserved against the
// owner's quota from its creation.
type Upload struct {
	ID          string
	OwnerID     string
	Key         string // the staged file's key once finished
	Name        string
	ContentType string
	TTL         time.Duration // the staged file's; 0 keeps it until deleted
	Size        int64
	Received    int64 // bytes stored so far, in Parts parts
	Parts       int
	CreatedAt   time.Time
	// ExpiresAt is when an unfinished upload's bytes go, or a finished upload's row.
	ExpiresAt time.Time
	// FinishingUntil is how long a server making the staged file holds the upload.
	FinishingUntil time.Time
	FinishedAt     *time.Time
}

// UploadPart is one stored run of an upload's bytes: [Start, Start+Size).
type UploadPart struct {
	Start    int64
	Size     int64
	BlobKey  string
	Checksum string // of the part's bytes, as the blob store computed it
}

const uploadCols = "id, owner_id, key, name, content_type, ttl_ms, size, received, parts, created_at, expires_at, finishing_until, finished_at"

func scanUpload(row interface{ Scan(...any) error }) (Upload, error) {
	var u Upload
	var ttl, created, expires, finishing int64
	var finished sql.NullInt64
	if err := row.Scan(&u.ID, &u.OwnerID, &u.Key, &u.Name, &u.ContentType, &ttl, &u.Size, &u.Received, &u.Parts,
		&created, &expires, &finishing, &finished); err != nil {
		return Upload{}, mapErr(err)
	}
	u.TTL = time.Duration(ttl) * time.Millisecond
	u.CreatedAt, u.ExpiresAt, u.FinishingUntil = fromMS(created), fromMS(expires), fromMS(finishing)
	if finished.Valid {
		t := fromMS(finished.Int64)
		u.FinishedAt = &t
	}
	return u, nil
}

// ErrTooManyUploads means the owner has as many unfinished uploads as one may have.
var ErrTooManyUploads = errors.New("too many unfinished uploads")

// UploadLimits bound the uploads of an owner when one is created.
type UploadLimits struct {
	MaxOpen   int   // unfinished uploads of one owner
	UserQuota int64 // bytes of one owner's live files, their kept versions and reservations
	MaxTotal  int64 // bytes of everyone's
	// Freed is what the upload's file frees when it replaces the one under its key (the
	// replaced file, or the versions that then go), counted as free now.
	Freed int64
}

// CreateUpload stores u unless, at now, its owner already has lim.MaxOpen unfinished
// uploads (ErrTooManyUploads), or u's whole size does not fit beside the live files and
// the other unfinished uploads' reservations in the owner's quota (ErrOverQuota) or the
// store's total (ErrOverTotal); the live file under u's key does not count, as u
// replaces it. The checks and the insert are one transaction, and one owner's creations
// and commits (CommitFile) run one at a time, so creations sent at once cannot together
// pass a limit.
func (s *Store) CreateUpload(ctx context.Context, u Upload, lim UploadLimits, now time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, s.rebind("SELECT id FROM users WHERE id = ? FOR UPDATE"), u.OwnerID); err != nil {
				return err
			}
		}
		var open int
		var ru, rt int64
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(SUM(CASE WHEN owner_id = ? THEN 1 ELSE 0 END), 0),
				COALESCE(SUM(CASE WHEN owner_id = ? THEN size ELSE 0 END), 0), COALESCE(SUM(size), 0)
			FROM uploads WHERE finished_at IS NULL AND expires_at > ?`), u.OwnerID, u.OwnerID, ms(now)).Scan(&open, &ru, &rt); err != nil {
			return err
		}
		if open >= lim.MaxOpen {
			return fmt.Errorf("%d open: %w", open, ErrTooManyUploads)
		}
		// Everything the owner holds counts (no key is ""), old bytes not yet freed and
		// runs' and sessions' bytes included, less what this one frees; the reservations
		// are counted above.
		uu, all, err := s.usage(ctx, tx, u.OwnerID, usageExcept{}, now)
		if err != nil {
			return err
		}
		fu, ft := uu.Total()-uu.Uploads-lim.Freed, all-rt-lim.Freed
		if fu+ru+u.Size > lim.UserQuota {
			return fmt.Errorf("%d bytes held, %d reserved, %d more: %w", fu, ru, u.Size, ErrOverQuota)
		}
		if ft+rt+u.Size > lim.MaxTotal {
			return fmt.Errorf("%d bytes stored, %d reserved, %d more: %w", ft, rt, u.Size, ErrOverTotal)
		}
		_, err = tx.ExecContext(ctx, s.rebind(`INSERT INTO uploads (`+uploadCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, 0, NULL)`),
			u.ID, u.OwnerID, u.Key, u.Name, u.ContentType, u.TTL.Milliseconds(), u.Size, ms(u.CreatedAt), ms(u.ExpiresAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("creating upload %s: %w", u.ID, err)
	}
	return nil
}

// UploadOf returns the upload id, finished, expired or not.
func (s *Store) UploadOf(ctx context.Context, id string) (Upload, error) {
	u, err := scanUpload(s.queryRow(ctx, "SELECT "+uploadCols+" FROM uploads WHERE id = ?", id))
	if err != nil {
		return Upload{}, fmt.Errorf("upload %s: %w", id, err)
	}
	return u, nil
}

// UploadParts returns the parts of upload id in the order of their bytes.
func (s *Store) UploadParts(ctx context.Context, id string) ([]UploadPart, error) {
	rows, err := s.query(ctx, "SELECT start, size, blob_key, checksum FROM upload_parts WHERE upload_id = ? ORDER BY start", id)
	return scanAll(rows, err, scanUploadPart)
}

func scanUploadPart(row interface{ Scan(...any) error }) (UploadPart, error) {
	var p UploadPart
	err := row.Scan(&p.Start, &p.Size, &p.BlobKey, &p.Checksum)
	return p, err
}

// AddUploadPart records part p of upload id, whose bytes are stored, if the upload still
// has p.Start bytes, is not finished or being finished at now, and has fewer than maxParts
// parts; it moves the upload's expiry to expiresAt. When p completes the upload, the
// caller holds it for finishing until finishUntil (see BeginFinishUpload). Otherwise it
// returns ErrConflict and the caller deletes p's bytes: another request got there first.
func (s *Store) AddUploadPart(ctx context.Context, id string, p UploadPart, maxParts int, now, expiresAt, finishUntil time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE uploads SET received = received + ?, parts = parts + 1, expires_at = ?,
				finishing_until = CASE WHEN received + ? = size THEN ? ELSE finishing_until END
			WHERE id = ? AND received = ? AND received + ? <= size AND parts < ? AND finished_at IS NULL AND finishing_until < ? AND expires_at > ?`,
			p.Size, ms(expiresAt), p.Size, ms(finishUntil), id, p.Start, p.Size, maxParts, ms(now), ms(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("upload %s is no longer at byte %d: %w", id, p.Start, ErrConflict)
		}
		_, err = s.txExec(ctx, tx, "INSERT INTO upload_parts (upload_id, start, size, blob_key, checksum) VALUES (?, ?, ?, ?, ?)",
			id, p.Start, p.Size, p.BlobKey, p.Checksum)
		return err
	})
	if err != nil {
		return fmt.Errorf("recording bytes %d-%d of upload %s: %w", p.Start, p.Start+p.Size, id, err)
	}
	return nil
}

// BeginFinishUpload takes upload id, whose bytes are all in, for making its staged file
// until until, unless it is finished or another server has it. It reports whether it
// took it.
func (s *Store) BeginFinishUpload(ctx context.Context, id string, now, until time.Time) (bool, error) {
	res, err := s.exec(ctx, "UPDATE uploads SET finishing_until = ? WHERE id = ? AND received = size AND finished_at IS NULL AND finishing_until < ?",
		ms(until), id, ms(now))
	if err != nil {
		return false, fmt.Errorf("finishing upload %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ExtendFinishUpload moves the hold on upload id, being finished, to until.
func (s *Store) ExtendFinishUpload(ctx context.Context, id string, until time.Time) error {
	_, err := s.exec(ctx, "UPDATE uploads SET finishing_until = ? WHERE id = ? AND finished_at IS NULL AND finishing_until > 0", ms(until), id)
	return err
}

// EndFinishUpload lets upload id go after BeginFinishUpload. When its staged file was
// made (done), the upload is finished at now and its row kept until keepUntil; its parts'
// rows go (the caller has deleted or taken their bytes).
func (s *Store) EndFinishUpload(ctx context.Context, id string, done bool, now, keepUntil time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if !done {
			_, err := s.txExec(ctx, tx, "UPDATE uploads SET finishing_until = 0 WHERE id = ?", id)
			return err
		}
		if _, err := s.txExec(ctx, tx, "UPDATE uploads SET finishing_until = 0, finished_at = ?, expires_at = ? WHERE id = ?",
			ms(now), ms(keepUntil), id); err != nil {
			return err
		}
		_, err := s.txExec(ctx, tx, "DELETE FROM upload_parts WHERE upload_id = ?", id)
		return err
	})
	if err != nil {
		return fmt.Errorf("finishing upload %s: %w", id, err)
	}
	return nil
}

// DropLastUploadPart forgets part p, the last of upload id, when all the upload's bytes
// are in but no server is making its file at now (one failed, or crashed doing it): the
// client sends those bytes again, and that request finishes the upload. It reports
// whether p went; the caller then deletes its bytes.
func (s *Store) DropLastUploadPart(ctx context.Context, id string, p UploadPart, now time.Time) (bool, error) {
	var dropped bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `UPDATE uploads SET received = received - ?, parts = parts - 1
			WHERE id = ? AND received = size AND received = ? AND finished_at IS NULL AND finishing_until < ?`,
			p.Size, id, p.Start+p.Size, ms(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		dropped = true
		_, err = s.txExec(ctx, tx, "DELETE FROM upload_parts WHERE upload_id = ? AND start = ?", id, p.Start)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("reopening upload %s: %w", id, err)
	}
	return dropped, nil
}

// DeleteUpload forgets upload id and its parts unless a server is making its file at
// now. It reports whether the upload went, and returns the parts it had then, whose
// bytes the caller deletes: a part recorded by a request that raced the deletion is
// among them (its record came first) or never recorded (it came after, and the request
// deletes its bytes itself).
func (s *Store) DeleteUpload(ctx context.Context, id string, now time.Time) ([]UploadPart, bool, error) {
	var parts []UploadPart
	var gone bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, "DELETE FROM uploads WHERE id = ? AND finishing_until < ?", id, ms(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		gone = true
		// Read after the upload's row is deleted (and locked): a part added before is
		// committed and seen, one added after finds no upload.
		rows, err := tx.QueryContext(ctx, s.rebind("SELECT start, size, blob_key, checksum FROM upload_parts WHERE upload_id = ? ORDER BY start"), id)
		if parts, err = scanAll(rows, err, scanUploadPart); err != nil {
			return err
		}
		_, err = s.txExec(ctx, tx, "DELETE FROM upload_parts WHERE upload_id = ?", id)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("deleting upload %s: %w", id, err)
	}
	return parts, gone, nil
}

// ExpiredUploads returns up to limit uploads that expired at or before now and that no
// server is finishing, the oldest first.
func (s *Store) ExpiredUploads(ctx context.Context, now time.Time, limit int) ([]Upload, error) {
	rows, err := s.query(ctx, "SELECT "+uploadCols+" FROM uploads WHERE expires_at <= ? AND finishing_until < ? ORDER BY expires_at, id LIMIT ?",
		ms(now), ms(now), limit)
	return scanAll(rows, err, scanUpload)
}
