// Package files owns the file staging area (SPEC §4): uploads that stream into the blob
// store under the size, quota and total limits, the SQL index that answers listing,
// ownership and quota questions, TTLs, and the expiry pass the janitor runs.
package files

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Sentinel errors, mapped to HTTP codes by the api package.
var (
	// ErrTooLarge means a file is over the per-file limit (413).
	ErrTooLarge = errors.New("file too large")
	// ErrQuota means the user's quota or the store's total would be exceeded (507).
	ErrQuota = errors.New("quota exceeded")
	// ErrNotFound means no live file of the caller's is under the key (404).
	ErrNotFound = errors.New("file not found")
	// ErrKeyTaken means the key belongs to another user's file (409).
	ErrKeyTaken = errors.New("key taken")
)

// Limits are the staging area's caps, in bytes.
type Limits struct {
	MaxFileBytes   int64
	UserQuotaBytes int64
	MaxTotalBytes  int64
}

// Service stages files.
type Service struct {
	st     *store.Store
	blobs  blob.Store
	limits Limits
	log    *slog.Logger
	now    func() time.Time
}

// New returns a Service over the index st and the bytes in blobs.
func New(st *store.Store, blobs blob.Store, limits Limits, log *slog.Logger) *Service {
	return &Service{st: st, blobs: blobs, limits: limits, log: log, now: time.Now}
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
	now := s.now()
	existing, err := s.st.ClaimFileKey(ctx, key, up.OwnerID, now, now.Add(pendingFor))
	if errors.Is(err, store.ErrConflict) {
		return store.File{}, errs.New(ErrKeyTaken, map[string]any{"key": key}, "the key %q is not available; choose another key", key)
	}
	if err != nil {
		return store.File{}, err
	}
	stored := false
	defer func() {
		if !existing && !stored {
			if err := s.st.DropPendingFile(context.WithoutCancel(ctx), key); err != nil {
				s.log.Warn("could not drop a pending file key; the janitor will", "key", key, "error", err)
			}
		}
	}()

	user, total, err := s.st.FileUsage(ctx, up.OwnerID, now)
	if err != nil {
		return store.File{}, err
	}
	if existing {
		// The old file's bytes are freed when the new ones replace them.
		if old, err := s.st.FileAny(ctx, key); err == nil && (old.ExpiresAt == nil || old.ExpiresAt.After(now)) {
			user -= old.Size
			total -= old.Size
		}
	}
	lr := &limitReader{r: up.Body, name: displayName(up.Name, key), limits: s.limits,
		userLeft: s.limits.UserQuotaBytes - user, totalLeft: s.limits.MaxTotalBytes - total}
	ct := up.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	// Every upload's bytes get a blob key of their own: a failed or concurrent upload
	// never touches the bytes another version's entry points to.
	blobKey := "files/_objects/" + ids.New("b")
	info, err := s.blobs.Put(ctx, blobKey, lr, blob.PutOptions{ContentType: ct})
	if err != nil {
		return store.File{}, err
	}
	f := store.File{Key: key, OwnerID: up.OwnerID, Size: info.Size, Checksum: info.Checksum, ContentType: ct,
		OriginalName: cleanName(up.Name, key), CreatedAt: now, BlobKey: blobKey}
	if up.TTL > 0 {
		exp := now.Add(up.TTL)
		f.ExpiresAt = &exp
	}
	old, err := s.st.CommitFile(context.WithoutCancel(ctx), f, s.limits.UserQuotaBytes, s.limits.MaxTotalBytes, now)
	if err != nil {
		s.blobs.Delete(context.WithoutCancel(ctx), blobKey)
		name := displayName(up.Name, key)
		switch {
		case errors.Is(err, store.ErrOverQuota):
			return store.File{}, errs.New(ErrQuota, map[string]any{"file": name, "quota_bytes": s.limits.UserQuotaBytes},
				"%s does not fit in your %s quota; delete some files first", name, Size(s.limits.UserQuotaBytes))
		case errors.Is(err, store.ErrOverTotal):
			return store.File{}, errs.New(ErrQuota, map[string]any{"file": name, "limit_bytes": s.limits.MaxTotalBytes},
				"%s does not fit: the file store is full (%s limit); ask an operator", name, Size(s.limits.MaxTotalBytes))
		}
		return store.File{}, err
	}
	stored = true
	if old != "" && old != blobKey {
		if err := s.blobs.Delete(context.WithoutCancel(ctx), old); err != nil && !errors.Is(err, blob.ErrNotFound) {
			s.log.Warn("deleting a replaced file's bytes", "key", key, "blob", old, "error", err)
		}
	}
	return f, nil
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

// Get returns the live file under key if caller may read it: its owner, or an admin.
// Anyone else is answered as if it did not exist.
func (s *Service) Get(ctx context.Context, caller store.User, key string) (store.File, error) {
	k, err := blob.NormalizeKey(key)
	if err != nil {
		return store.File{}, err
	}
	f, err := s.st.FileAny(ctx, k)
	notFound := errs.New(ErrNotFound, map[string]any{"key": k}, "file not found: %s", k)
	if errors.Is(err, store.ErrNotFound) {
		return store.File{}, notFound
	}
	if err != nil {
		return store.File{}, err
	}
	if f.Checksum == "" || (f.ExpiresAt != nil && !f.ExpiresAt.After(s.now())) ||
		(f.OwnerID != caller.ID && caller.Role != store.RoleAdmin) {
		return store.File{}, notFound
	}
	return f, nil
}

// Open reads f's bytes from off; n < 0 reads to the end.
func (s *Service) Open(ctx context.Context, f store.File, off, n int64) (io.ReadCloser, error) {
	rc, _, err := s.blobs.Get(ctx, f.BlobKey, off, n)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, errs.New(ErrNotFound, map[string]any{"key": f.Key}, "file not found: %s", f.Key)
	}
	return rc, err
}

// List returns up to limit of the caller's own live files under prefix, after the key
// after, and whether more follow.
func (s *Service) List(ctx context.Context, caller store.User, prefix, after string, limit int) ([]store.File, bool, error) {
	if prefix == "f_" || (strings.HasPrefix(prefix, "f_") && !strings.Contains(prefix, "/")) {
		prefix = "files/" + prefix
	}
	out, err := s.st.ListFiles(ctx, caller.ID, prefix, after, limit+1, s.now())
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// Delete removes the caller's file under key.
func (s *Service) Delete(ctx context.Context, caller store.User, key string) error {
	f, err := s.Get(ctx, caller, key)
	if err != nil {
		return err
	}
	_, err = s.remove(ctx, f)
	return err
}

// remove deletes f's index entry if it is still that version, then its bytes (which no
// other entry points to). It reports whether the entry went.
func (s *Service) remove(ctx context.Context, f store.File) (bool, error) {
	ok, err := s.st.DeleteFile(ctx, f)
	if err != nil || !ok || f.BlobKey == "" {
		return ok, err
	}
	if err := s.blobs.Delete(ctx, f.BlobKey); err != nil && !errors.Is(err, blob.ErrNotFound) {
		s.log.Warn("deleting a file's bytes", "key", f.Key, "blob", f.BlobKey, "error", err)
	}
	return true, nil
}

// Expired is what one expiry pass removed.
type Expired struct {
	Files int
	Bytes int64
}

// Expire removes every file whose TTL has passed, and every claimed key whose upload never
// finished.
func (s *Service) Expire(ctx context.Context) (Expired, error) {
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
