package staging

import (
	"context"
	"time"
)

// UploadLockLease is how long a lock of an upload lasts unless its holder renews it: a
// server that dies holding one lets it go this much later.
const UploadLockLease = 5 * time.Second

// LockUpload takes the lock of upload id for holder (see store.LockUpload): the lock
// that puts one request at a time on an upload, from any API node. With ask, a holder on
// another node is asked to let go.
func (s *Service) LockUpload(ctx context.Context, id, holder string, ask bool) (acquired, exists bool, err error) {
	now := s.now()
	return s.st.LockUpload(ctx, id, holder, ask, now, now.Add(UploadLockLease))
}

// RenewUploadLock keeps holder's lock of upload id for another lease, and reports
// whether it still held it and whether another request wants it.
func (s *Service) RenewUploadLock(ctx context.Context, id, holder string) (held, wanted bool, err error) {
	return s.st.RenewUploadLock(ctx, id, holder, s.now().Add(UploadLockLease))
}

// UnlockUpload lets holder's lock of upload id go.
func (s *Service) UnlockUpload(ctx context.Context, id, holder string) error {
	return s.st.UnlockUpload(ctx, id, holder)
}
