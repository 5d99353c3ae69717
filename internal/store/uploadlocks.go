package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LockUpload takes the lock of upload id for holder until until, if no one holds it or
// its holder let it lapse by now. When another holds it and ask is set, it notes that
// someone wants it (RenewUploadLock tells the holder). exists is false when there is no
// such upload.
func (s *Store) LockUpload(ctx context.Context, id, holder string, ask bool, now, until time.Time) (acquired, exists bool, err error) {
	res, err := s.exec(ctx, "UPDATE uploads SET lock_holder = ?, lock_until = ?, lock_wanted = 0 WHERE id = ? AND (lock_holder = '' OR lock_until < ?)",
		holder, ms(until), id, ms(now))
	if err != nil {
		return false, false, fmt.Errorf("locking upload %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, true, nil
	}
	if !ask {
		var one int
		err := s.queryRow(ctx, "SELECT 1 FROM uploads WHERE id = ?", id).Scan(&one)
		if err = mapErr(err); errors.Is(err, ErrNotFound) {
			return false, false, nil
		}
		return false, err == nil, err
	}
	res, err = s.exec(ctx, "UPDATE uploads SET lock_wanted = ? WHERE id = ?", ms(now), id)
	if err != nil {
		return false, false, fmt.Errorf("locking upload %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return false, n == 1, nil
}

// RenewUploadLock keeps holder's lock of upload id until until. It reports whether
// holder still held it, and whether another request wants it.
func (s *Store) RenewUploadLock(ctx context.Context, id, holder string, until time.Time) (held, wanted bool, err error) {
	res, err := s.exec(ctx, "UPDATE uploads SET lock_until = ? WHERE id = ? AND lock_holder = ?", ms(until), id, holder)
	if err != nil {
		return false, false, fmt.Errorf("renewing the lock of upload %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, false, nil
	}
	var w int64
	if err := s.queryRow(ctx, "SELECT lock_wanted FROM uploads WHERE id = ?", id).Scan(&w); err != nil {
		return false, false, fmt.Errorf("renewing the lock of upload %s: %w", id, mapErr(err))
	}
	return true, w > 0, nil
}

// UnlockUpload lets holder's lock of upload id go.
func (s *Store) UnlockUpload(ctx context.Context, id, holder string) error {
	_, err := s.exec(ctx, "UPDATE uploads SET lock_holder = '', lock_until = 0 WHERE id = ? AND lock_holder = ?", id, holder)
	if err != nil {
		return fmt.Errorf("unlocking upload %s: %w", id, err)
	}
	return nil
}
