// Package staging owns the file staging area (docs/spec.md §4): uploads that stream into the blob
// store under the size, quota and total limits, reads that are whole or an error, the SQL
// index that answers listing, ownership and quota questions, TTLs, and the expiry pass the
// janitor runs.
package staging

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/store"
)

// Sentinel errors, mapped to HTTP codes by the api package.
var (
	// ErrTooLarge means a file is over the per-file limit (413).
	ErrTooLarge = errors.New("file too large")
	// ErrQuota means the user's quota or the store's total would be exceeded (507).
	ErrQuota = errors.New("quota exceeded")
	// ErrNotFound means no live file is under the key in the owner's files, or no user
	// whose files the caller may address (404).
	ErrNotFound = errors.New("file not found")
	// ErrDamaged means a file's stored bytes do not match the checksum recorded for them
	// (a server fault that is logged and counted, with a sentence of its own for the client).
	ErrDamaged = errors.New("stored bytes damaged")
	// ErrUnavailable means the blob store did not answer a read (503).
	ErrUnavailable = errors.New("file store unavailable")
	// ErrUnreadable means a file's bytes are missing or not as recorded: the server's
	// fault, so it is logged and counted, and the client gets a 500.
	ErrUnreadable = errors.New("file bytes unreadable")
)

// Limits are the staging area's caps, in bytes.
type Limits struct {
	MaxFileBytes   int64
	UserQuotaBytes int64
	MaxTotalBytes  int64
	// LinkMaxTTL is the longest ttl of a share link; 0 is DefaultLinkMaxTTL.
	LinkMaxTTL time.Duration
	// UploadTTL is how long an unfinished resumable upload waits for its next bytes; 0
	// is DefaultUploadTTL.
	UploadTTL time.Duration
	// Versions is how many previous versions of a file an overwrite keeps; 0 keeps none.
	Versions int
	// UploadLinks is how many upload links that still work one owner may hold; 0 is
	// MaxUploadLinks (SKRIP_UPLOAD_LINKS_PER_USER).
	UploadLinks int
	// OpenUploads is how many unfinished resumable uploads one owner may have; 0 is
	// MaxOpenUploads (SKRIP_UPLOADS_PER_USER).
	OpenUploads int
}

// Service stages files.
type Service struct {
	st      *store.Store
	blobs   blob.Store
	limits  Limits
	metrics *metrics.Metrics
	log     *slog.Logger
	now     func() time.Time
}

// New returns a Service over the index st and the bytes in blobs. It counts failed reads
// in m.
func New(st *store.Store, blobs blob.Store, limits Limits, m *metrics.Metrics, log *slog.Logger) *Service {
	if limits.UploadLinks <= 0 {
		limits.UploadLinks = MaxUploadLinks
	}
	if limits.OpenUploads <= 0 {
		limits.OpenUploads = MaxOpenUploads
	}
	return &Service{st: st, blobs: blobs, limits: limits, metrics: m, log: log, now: time.Now}
}

// RetiredGrace is how long the bytes of a replaced, deleted or expired version stay in the
// blob store, so that a download or stage that opened that version finishes whole. The
// janitor deletes them after it, or sooner when an upload needs the room (makeRoom).
const RetiredGrace = 15 * time.Minute

// Usage is what ownerID holds now, by kind: everything their quota counts. It reads
// ownerID's rows alone (GET /me and the account page ask it), not the store's total.
func (s *Service) Usage(ctx context.Context, ownerID string) (store.Usage, error) {
	return s.st.OwnerUsage(ctx, ownerID, s.now())
}

// Limits returns the caps in force.
func (s *Service) Limits() Limits { return s.limits }

// Upload is one file to stage.
type Upload struct {
	OwnerID     string
	Key         string        // "" gets files/f_<ULID>; a chosen key must be under files/
	Name        string        // the original file name, for Content-Disposition
	ContentType string        // "" is application/octet-stream
	TTL         time.Duration // 0 keeps the file until it is deleted
	Body        io.Reader
	// Cond is the write's condition on the file under Key; the zero Cond holds always.
	Cond Cond

	// uploadID is the resumable upload whose parts Body reads: its reservation is not
	// counted against its own bytes.
	uploadID string
	// sized says Body's length, size, was declared before it (Intake.Size).
	sized bool
	size  int64
	// lateQuota judges the owner's quota and the store's total only once the whole body
	// is in (an upload through a link: ReceiveByLink); the per-file limit still applies
	// from the start.
	lateQuota bool
}

// pendingFor is how long a claimed key waits for its bytes before the janitor frees it.
const pendingFor = time.Hour

// Put streams up.Body into the blob store and indexes it. The limits are enforced while
// streaming: a file over a limit, a body that fails halfway (a client that disconnects)
// or a cancelled ctx stores nothing, and a file already under the key stays as it was.
func (s *Service) Put(ctx context.Context, up Upload) (store.File, error) {
	key, err := uploadKey(up.Key)
	if err != nil {
		return store.File{}, err
	}
	name := displayName(up.Name, key)
	if up.sized {
		if err := s.tooLarge(name, up.size); err != nil {
			return store.File{}, err
		}
	}
	if !up.Cond.IsZero() {
		// Refused before a byte moves when it does not hold now; commit checks it again.
		if err := s.checkNow(ctx, up.OwnerID, key, up.Cond); err != nil {
			return store.File{}, err
		}
	}
	now := s.now()
	existing, err := s.st.ClaimFileKey(ctx, up.OwnerID, key, now, now.Add(pendingFor))
	if err != nil {
		return store.File{}, err
	}
	stored := false
	defer func() {
		if !existing && !stored {
			if err := s.st.DropPendingFile(context.WithoutCancel(ctx), up.OwnerID, key); err != nil {
				s.log.Warn("could not drop a pending file key; the janitor will", "key", key, "error", err)
			}
		}
	}()

	user, total, err := s.usage(ctx, up.OwnerID, up.uploadID, now)
	if err != nil {
		return store.File{}, err
	}
	if user, total, err = s.makeRoom(ctx, up.OwnerID, user, total); err != nil {
		return store.File{}, err
	}
	if existing {
		// The bytes the overwrite frees: the old file's, or the versions it pushes out.
		freed := s.freedByOverwrite(ctx, up.OwnerID, key, now)
		user -= freed
		total -= freed
	}
	lr := &limitReader{r: up.Body, name: name, limits: s.limits,
		userLeft: s.limits.UserQuotaBytes - user, totalLeft: s.limits.MaxTotalBytes - total, late: up.lateQuota}
	if up.sized && !up.lateQuota {
		// Refused before a byte moves when the declared length does not fit.
		if err := lr.fits(up.size); err != nil {
			return store.File{}, err
		}
	}
	if up.sized {
		lr.sized, lr.size = true, up.size
	}
	ct := up.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	// Every upload's bytes get a blob key of their own: a failed or concurrent upload
	// never touches the bytes another version's entry points to.
	blobKey := "files/_objects/" + ids.New("b")
	info, err := s.blobs.Put(ctx, blobKey, lr, blob.PutOptions{ContentType: ct, FileKey: key, Owner: up.OwnerID, Name: cleanName(up.Name, key)})
	if err != nil {
		return store.File{}, err
	}
	if up.lateQuota {
		// The whole body is in: only now is it judged against the quota and the total.
		if err := lr.quota(); err != nil {
			s.blobs.Delete(context.WithoutCancel(ctx), blobKey)
			return store.File{}, err
		}
	}
	f := store.File{Key: key, OwnerID: up.OwnerID, Size: info.Size, Checksum: info.Checksum, ContentType: ct,
		OriginalName: cleanName(up.Name, key), CreatedAt: now, BlobKey: blobKey, VersionID: ids.New("v")}
	if up.TTL > 0 {
		exp := now.Add(up.TTL)
		f.ExpiresAt = &exp
	}
	if err := s.commitIf(ctx, f, up.Cond, name, now); err != nil {
		s.blobs.Delete(context.WithoutCancel(ctx), blobKey)
		return store.File{}, err
	}
	stored = true
	return f, nil
}

// commit indexes f, whose bytes are stored, as the version of its key, checking the
// owner's quota and the store's total once more against everything committed before it.
// The replaced version is kept (Limits.Versions), or its bytes are retired, not deleted:
// a reader may have opened them; when they pass the quota they are freed at once. Every
// staged file passes here once, whichever way it came in, so its bytes are counted here.
func (s *Service) commit(ctx context.Context, f store.File, name string, now time.Time) error {
	return s.commitIf(ctx, f, Cond{}, name, now)
}

// commitIf is commit when the file under f.Key meets cond, checked in the commit's
// transaction: otherwise it commits nothing and returns ErrPrecondition.
func (s *Service) commitIf(ctx context.Context, f store.File, cond Cond, name string, now time.Time) error {
	var check func(*store.File) error
	if !cond.IsZero() {
		check = func(cur *store.File) error { return cond.check(f.Key, cur) }
	}
	if err := s.st.CommitFileIf(context.WithoutCancel(ctx), f, check, s.limits.Versions, s.limits.UserQuotaBytes, s.limits.MaxTotalBytes, now); err != nil {
		return s.limitError(err, name)
	}
	s.metrics.BytesUploaded.Add(float64(f.Size))
	// The replaced version's bytes are retired, and count until they are freed: free
	// them now when they pass the quota.
	if err := s.freeRetired(context.WithoutCancel(ctx), f.OwnerID); err != nil {
		s.log.Warn("could not free the old bytes of an overwrite early; the janitor will", "key", f.Key, "error", err)
	}
	return nil
}

// limitError is err as the client is told it when it is the store's ErrOverQuota or
// ErrOverTotal for the file name; any other err as it is.
func (s *Service) limitError(err error, name string) error {
	switch {
	case errors.Is(err, store.ErrOverQuota):
		return errs.New(ErrQuota, map[string]any{"file": name, "quota_bytes": s.limits.UserQuotaBytes},
			"%s does not fit in your %s quota%s; delete some files first", name, Size(s.limits.UserQuotaBytes), s.versionsCount())
	case errors.Is(err, store.ErrOverTotal):
		return errs.New(ErrQuota, map[string]any{"file": name, "limit_bytes": s.limits.MaxTotalBytes},
			"%s does not fit: the file store is full (%s limit); ask an operator", name, Size(s.limits.MaxTotalBytes))
	}
	return err
}

// makeRoom deletes retired versions' bytes early, the oldest first, when with them the
// owner (user bytes held, every kind counted, retired ones included) could not take one
// more file of the largest size within their quota, or the store (total) within its
// total: retired bytes count until they are freed (SPEC §12), and they only ever use
// room no upload needs. A download still reading such a version then fails (the
// connection is cut), never returning other bytes. It returns user and total after.
func (s *Service) makeRoom(ctx context.Context, ownerID string, user, total int64) (int64, int64, error) {
	for user+s.limits.MaxFileBytes > s.limits.UserQuotaBytes {
		batch, err := s.st.OwnerRetiredBlobs(ctx, ownerID, 100)
		if err != nil || len(batch) == 0 {
			break
		}
		for _, b := range batch {
			if err := s.dropRetired(ctx, b); err != nil {
				return user, total, err
			}
			user, total = user-b.Size, total-b.Size
			if user+s.limits.MaxFileBytes <= s.limits.UserQuotaBytes {
				break
			}
		}
	}
	if total+s.limits.MaxFileBytes <= s.limits.MaxTotalBytes {
		return user, total, nil
	}
	for total+s.limits.MaxFileBytes > s.limits.MaxTotalBytes {
		batch, err := s.st.RetiredFileBlobs(ctx, s.now(), 100)
		if err != nil || len(batch) == 0 {
			return user, total, err
		}
		for _, b := range batch {
			if err := s.dropRetired(ctx, b); err != nil {
				return user, total, err
			}
			if total -= b.Size; total+s.limits.MaxFileBytes <= s.limits.MaxTotalBytes {
				return user, total, nil
			}
		}
	}
	return user, total, nil
}

// freeRetired deletes ownerID's retired bytes, the oldest first, while ownerID holds
// more than the quota, and anyone's while the store holds more than its total: what a
// commit that retired the version it replaced leaves, so that an overwrite never holds
// more than the quota, old bytes included.
func (s *Service) freeRetired(ctx context.Context, ownerID string) error {
	u, total, err := s.st.UserUsage(ctx, ownerID, s.now())
	if err != nil {
		return err
	}
	user := u.Total()
	if user <= s.limits.UserQuotaBytes && total <= s.limits.MaxTotalBytes {
		return nil
	}
	for user > s.limits.UserQuotaBytes {
		batch, err := s.st.OwnerRetiredBlobs(ctx, ownerID, 100)
		if err != nil || len(batch) == 0 {
			break
		}
		for _, b := range batch {
			if err := s.dropRetired(ctx, b); err != nil {
				return err
			}
			if user, total = user-b.Size, total-b.Size; user <= s.limits.UserQuotaBytes {
				break
			}
		}
	}
	for total > s.limits.MaxTotalBytes {
		batch, err := s.st.RetiredFileBlobs(ctx, s.now(), 100)
		if err != nil || len(batch) == 0 {
			return err
		}
		for _, b := range batch {
			if err := s.dropRetired(ctx, b); err != nil {
				return err
			}
			if total -= b.Size; total <= s.limits.MaxTotalBytes {
				return nil
			}
		}
	}
	return nil
}

// dropRetired deletes a retired version's bytes and forgets them.
func (s *Service) dropRetired(ctx context.Context, b store.RetiredBlob) error {
	if err := s.blobs.Delete(ctx, b.BlobKey); err != nil && !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("deleting the bytes of a replaced file version: %w", err)
	}
	return s.st.DropRetiredFileBlob(ctx, b.BlobKey)
}

// uploadKey returns the key to store under: a fresh files/f_<ULID>, or the caller's key,
// which must be valid and under files/.
func uploadKey(key string) (string, error) {
	if key == "" {
		return "files/" + ids.New("f"), nil
	}
	k, err := blob.NormalizeKey(key)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(k, "files/") {
		return "", errs.New(blob.ErrInvalidKey, map[string]any{"key": key}, "a key you choose must start with files/, got %q", key)
	}
	return k, nil
}

// Namespace returns the id of the user whose files caller addresses with owner (docs/spec.md §4):
// caller's own with owner "" (or caller's own id or name), another user's (by id or
// name) only for an admin. Anyone else naming another owner gets ErrNotFound, the same
// whether that user exists or not.
func (s *Service) Namespace(ctx context.Context, caller store.User, owner string) (string, error) {
	if owner == "" || owner == caller.ID || owner == caller.Name {
		return caller.ID, nil
	}
	if caller.Role != store.RoleAdmin {
		return "", errs.New(ErrNotFound, map[string]any{"owner": owner}, "no files of %q that you can see: only admins address another user's files", owner)
	}
	u, err := s.st.User(ctx, owner)
	if errors.Is(err, store.ErrNotFound) {
		u, err = s.st.UserByName(ctx, owner)
	}
	if errors.Is(err, store.ErrNotFound) {
		return "", errs.New(ErrNotFound, map[string]any{"owner": owner}, "no user with the id or name %q", owner)
	}
	if err != nil {
		return "", err
	}
	return u.ID, nil
}

// Get returns the live file under key in ownerID's files.
func (s *Service) Get(ctx context.Context, ownerID, key string) (store.File, error) {
	k, err := blob.NormalizeKey(key)
	if err != nil {
		return store.File{}, err
	}
	f, err := s.st.FileOf(ctx, ownerID, k)
	notFound := errs.New(ErrNotFound, map[string]any{"key": k}, "file not found: %s", k)
	if errors.Is(err, store.ErrNotFound) {
		return store.File{}, notFound
	}
	if err != nil {
		return store.File{}, err
	}
	if f.Checksum == "" || (f.ExpiresAt != nil && !f.ExpiresAt.After(s.now())) {
		return store.File{}, notFound
	}
	return f, nil
}

// List returns up to limit of ownerID's live files under prefix, from the page cursor
// names ("" for the first), and the cursor of the next page ("" when none follows). A
// cursor that no listing gave out is ErrBadCursor.
func (s *Service) List(ctx context.Context, ownerID, prefix, cursor string, limit int) ([]store.File, string, error) {
	after, err := ParseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if prefix == "f_" || (strings.HasPrefix(prefix, "f_") && !strings.Contains(prefix, "/")) {
		prefix = "files/" + prefix
	}
	out, err := s.st.ListFiles(ctx, ownerID, prefix, after, limit+1, s.now())
	if err != nil {
		return nil, "", err
	}
	if len(out) > limit {
		return out[:limit], Cursor(out[limit-1].Key), nil
	}
	return out, "", nil
}

// Delete removes ownerID's file under key, with its previous versions.
func (s *Service) Delete(ctx context.Context, ownerID, key string) error {
	return s.DeleteIf(ctx, ownerID, key, Cond{})
}

// DeleteIf is Delete when the file under key meets cond (If-Match, If-None-Match), and
// ErrPrecondition otherwise. The version cond was checked against is the one deleted,
// or none: store.DeleteFile removes the entry only while it is still that version, so a
// write that lands between the check and the delete is never deleted unseen. Then the
// new version is checked in its turn.
func (s *Service) DeleteIf(ctx context.Context, ownerID, key string, cond Cond) error {
	for attempt := 0; ; attempt++ {
		f, err := s.Get(ctx, ownerID, key)
		if err != nil {
			if errors.Is(err, ErrNotFound) && !cond.IsZero() {
				k, _ := blob.NormalizeKey(key)
				if cerr := cond.check(k, nil); cerr != nil {
					return cerr
				}
			}
			return err
		}
		if err := cond.check(f.Key, &f); err != nil {
			return err
		}
		gone, err := s.remove(ctx, f)
		if err != nil || gone || cond.IsZero() {
			return err
		}
		if attempt == 2 {
			return errs.New(ErrPrecondition, map[string]any{"key": f.Key, "current_etag": nil},
				"%s changed again and again while it was being deleted; nothing was deleted: read it and try again", f.Key)
		}
	}
}

// checkNow checks cond against the live file under key in ownerID's files now.
func (s *Service) checkNow(ctx context.Context, ownerID, key string, cond Cond) error {
	f, err := s.Get(ctx, ownerID, key)
	if errors.Is(err, ErrNotFound) {
		return cond.check(key, nil)
	}
	if err != nil {
		return err
	}
	return cond.check(key, &f)
}

// remove deletes f's index entry if it is still that version, and retires its bytes
// (which no other entry points to). It reports whether the entry went.
func (s *Service) remove(ctx context.Context, f store.File) (bool, error) {
	return s.st.DeleteFile(ctx, f, s.now())
}

// Expired is what one expiry pass removed.
type Expired struct {
	Files    int   // live files whose TTL passed
	Bytes    int64 // their bytes
	Versions int   // retired versions whose bytes were deleted after RetiredGrace
	Trimmed  int   // kept versions beyond Limits.Versions, retired
}

// Expire removes every file whose TTL has passed (with its versions), every claimed key
// whose upload never finished, the kept versions beyond Limits.Versions, and the bytes of
// versions retired more than RetiredGrace ago.
func (s *Service) Expire(ctx context.Context) (Expired, error) {
	out, err := s.expireFiles(ctx)
	if err != nil {
		return out, err
	}
	if out.Trimmed, err = s.trimVersions(ctx); err != nil {
		return out, err
	}
	for {
		batch, err := s.st.RetiredFileBlobs(ctx, s.now().Add(-RetiredGrace), 500)
		if err != nil || len(batch) == 0 {
			return out, err
		}
		for _, b := range batch {
			if err := s.dropRetired(ctx, b); err != nil {
				return out, err
			}
			out.Versions++
		}
	}
}

func (s *Service) expireFiles(ctx context.Context) (Expired, error) {
	var out Expired
	for {
		batch, err := s.st.ExpiredFiles(ctx, s.now(), 500)
		if err != nil || len(batch) == 0 {
			return out, err
		}
		removed := 0
		for _, f := range batch {
			ok, err := s.remove(ctx, f)
			if err != nil {
				return out, err
			}
			if ok {
				removed++
				if f.Checksum != "" {
					out.Files++
					out.Bytes += f.Size
				}
			}
		}
		if removed == 0 {
			return out, nil
		}
	}
}

// cleanName keeps the base name of an uploaded file's name, without control characters;
// with none it is the key's last segment.
func cleanName(name, key string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '/' || r == '\\' {
			return -1
		}
		return r
	}, path.Base(strings.ReplaceAll(name, "\\", "/")))
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == ".." {
		return path.Base(key)
	}
	for len(name) > 255 {
		_, size := lastRune(name)
		name = name[:len(name)-size]
	}
	return name
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return rune(s[i]), len(s) - i
		}
	}
	return 0, 1
}

func displayName(name, key string) string {
	if name == "" {
		return key
	}
	return cleanName(name, key)
}
