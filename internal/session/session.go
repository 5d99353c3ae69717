// Package session owns tool sessions (docs/spec.md §6, §7): the server-owned state of a
// (tool, user, context) with its state_rev compare-and-swap, and the files uploaded at
// the start, kept as one set that is replaced atomically and injected into later runs.
package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blobcache"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/hashcopy"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// Sentinel errors.
var (
	// ErrConflict means the session moved on: expected_state_rev is not the current one.
	ErrConflict = errors.New("session conflict")
	// ErrNoSession means the tool has no session for this user and context.
	ErrNoSession = errors.New("no session")
	// ErrQuota means a run's uploads, as the session's new files, would pass their
	// user's quota or the store's total (507).
	ErrQuota = errors.New("session files over quota")
)

// MaxContextLen is the longest context name.
const MaxContextLen = 64

// File is one session file.
type File struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	Key    string `json:"key"`
}

// Service keeps sessions.
type Service struct {
	st    *store.Store
	blobs blob.Store
	ttl   time.Duration
	log   *slog.Logger
	now   func() time.Time

	cache *blobcache.Cache // session files by checksum, when blobs are not files on this disk

	// userQuota and maxTotal bound a new file set beside everything else (UseQuota); 0
	// does not check.
	userQuota, maxTotal int64

	mu        sync.Mutex
	replacing map[string]bool // ids of the sets Replace is storing, not yet in a row
}

// New returns a Service whose file sets expire ttl after their last access.
func New(st *store.Store, blobs blob.Store, ttl time.Duration, log *slog.Logger) *Service {
	return &Service{st: st, blobs: blobs, ttl: ttl, log: log, now: time.Now, replacing: map[string]bool{}}
}

// UseCache makes Inject give runs the session files from c, a cache on this machine's
// disk filled from the blob store once per checksum, as hard links: for a blob store
// whose objects are not files here (NATS), where a snapshot would otherwise be a copy of
// every byte each run. Call it before the first Inject.
func (s *Service) UseCache(c *blobcache.Cache) { s.cache = c }

// UseQuota makes Replace refuse a file set that does not fit beside everything else its
// user holds in userQuota, or beside everyone's in maxTotal (SPEC §12). Call it before
// the first Replace.
func (s *Service) UseQuota(userQuota, maxTotal int64) { s.userQuota, s.maxTotal = userQuota, maxTotal }

// TTL is how long a file set lives after its last access.
func (s *Service) TTL() time.Duration { return s.ttl }

// Get returns a session's state, or an error wrapping ErrNoSession.
func (s *Service) Get(ctx context.Context, k store.SessionKey) (store.Session, error) {
	sess, err := s.st.Session(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, errs.New(ErrNoSession, map[string]any{"context": k.Context}, "no session for this tool in context %q; run the tool first", k.Context)
	}
	return sess, err
}

// Start records the state an initial run left (nil: {}) as a new revision, and returns it.
func (s *Service) Start(ctx context.Context, k store.SessionKey, state json.RawMessage, runID string) (int64, error) {
	rev, err := s.st.WriteSession(ctx, k, normalState(state), runID, s.now())
	if err == nil {
		s.record(ctx, k, rev)
	}
	return rev, err
}

// Advance moves the session from revision expected to expected+1 with state (nil: keep
// the state; JSON null: reset it to {}). It reports false when another write won.
func (s *Service) Advance(ctx context.Context, k store.SessionKey, expected int64, state json.RawMessage, runID string) (bool, error) {
	st := ""
	if state != nil {
		st = normalState(state)
	}
	ok, err := s.st.CompareAndSwapSession(ctx, k, expected, st, runID, s.now())
	if ok {
		s.record(ctx, k, expected+1)
	}
	return ok, err
}

func normalState(state json.RawMessage) string { return store.NormalState(state) }

// ContextDir is the filesystem-safe form of a context in blob keys: hex SHA-256, so no
// ':' or '/' ever reaches a key.
func ContextDir(c string) string {
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:16])
}

// Replace stores the files of dir (an upload already validated) as the session's new
// set. The swap is one database write: a failure or crash at any point leaves the old
// set or the new one, never a mix; the replaced set's bytes are deleted afterwards.
func (s *Service) Replace(ctx context.Context, k store.SessionKey, dir string, names []string) error {
	setID := ids.New("s")
	s.mu.Lock()
	s.replacing[setID] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.replacing, setID)
		s.mu.Unlock()
	}()
	if err := s.fits(ctx, k, dir, names); err != nil {
		return err
	}
	prefix := fmt.Sprintf("sessions/%s/%s/%s/%s/", k.ToolID, k.UserID, ContextDir(k.Context), setID)
	var files []File
	var total int64
	undo := func() {
		for _, f := range files {
			s.blobs.Delete(context.WithoutCancel(ctx), f.Key)
		}
	}
	for i, name := range names {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			undo()
			return err
		}
		key := fmt.Sprintf("%s%03d-%s", prefix, i, blob.SafeSegment(name))
		info, err := s.blobs.Put(ctx, key, f, blob.PutOptions{ContentType: "application/octet-stream"})
		f.Close()
		if err != nil {
			undo()
			return fmt.Errorf("storing session file %s: %w", name, err)
		}
		files = append(files, File{Name: name, Bytes: info.Size, SHA256: strings.TrimPrefix(info.Checksum, "sha256:"), Key: key})
		total += info.Size
	}
	b, _ := json.Marshal(files)
	now := s.now()
	old, err := s.st.SwapSessionFiles(ctx, store.FileSet{SessionKey: k, SetID: setID, Files: string(b), Bytes: total, CreatedAt: now, LastAccessedAt: now},
		s.userQuota, s.maxTotal, now)
	if err != nil {
		undo()
		if errors.Is(err, store.ErrOverQuota) || errors.Is(err, store.ErrOverTotal) {
			return s.quotaError(ctx, k, total, err)
		}
		return err
	}
	if old != nil {
		s.deleteBlobs(ctx, *old)
	}
	return nil
}

// fits refuses, before any byte is stored, a set of the files names of dir that does not
// fit beside what its user holds now (the set it replaces not counted). SwapSessionFiles
// checks again, atomically, when the set is stored.
func (s *Service) fits(ctx context.Context, k store.SessionKey, dir string, names []string) error {
	if s.userQuota <= 0 {
		return nil
	}
	var n int64
	for _, name := range names {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		n += info.Size()
	}
	u, total, err := s.st.UserUsage(ctx, k.UserID, s.now())
	if err != nil {
		return err
	}
	var current int64
	if set, err := s.st.SessionFiles(ctx, k); err == nil {
		current = set.Bytes
	}
	switch {
	case u.Total()-current+n > s.userQuota:
		return s.quotaError(ctx, k, n, store.ErrOverQuota)
	case total-current+n > s.maxTotal:
		return s.quotaError(ctx, k, n, store.ErrOverTotal)
	}
	return nil
}

// quotaError is the refusal of a file set of n bytes for k's user: cause is the store's
// ErrOverQuota or ErrOverTotal.
func (s *Service) quotaError(ctx context.Context, k store.SessionKey, n int64, cause error) error {
	if errors.Is(cause, store.ErrOverTotal) {
		return errs.New(ErrQuota, map[string]any{"bytes": n, "limit_bytes": s.maxTotal},
			"the files of this run (%s) do not fit: the file store is full (%s limit); ask an operator",
			runner.HumanBytes(n), runner.HumanBytes(s.maxTotal))
	}
	var used int64
	if u, err := s.st.OwnerUsage(ctx, k.UserID, s.now()); err == nil {
		used = u.Total()
		if set, err := s.st.SessionFiles(ctx, k); err == nil {
			used -= set.Bytes // replaced by the new set
		}
	}
	return errs.New(ErrQuota, map[string]any{"bytes": n, "quota_bytes": s.userQuota, "used_bytes": used},
		"the files of this run (%s) do not fit in your %s quota: you use %s of it already; delete some files or old sessions' files first",
		runner.HumanBytes(n), runner.HumanBytes(s.userQuota), runner.HumanBytes(used))
}

// Files returns the session's current files and touches last_accessed_at; no set is an
// empty list.
func (s *Service) Files(ctx context.Context, k store.SessionKey) ([]File, store.FileSet, error) {
	set, err := s.st.SessionFiles(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return []File{}, store.FileSet{}, nil
	}
	if err != nil {
		return nil, store.FileSet{}, err
	}
	var files []File
	if err := json.Unmarshal([]byte(set.Files), &files); err != nil {
		return nil, store.FileSet{}, fmt.Errorf("session file set %s: %w", set.SetID, err)
	}
	set.LastAccessedAt = s.now()
	if err := s.st.TouchSessionFiles(ctx, k, set.SetID, set.LastAccessedAt); err != nil {
		return nil, store.FileSet{}, err
	}
	return files, set, nil
}

// linker is implemented by blob stores whose objects are immutable files on this
// machine: a snapshot is then a set of hard links and copies no bytes.
type linker interface {
	ObjectPath(ctx context.Context, key string) (string, blob.Info, error)
}

// Inject places a read-only snapshot of the session's files in dir, touches
// last_accessed_at, and returns the files. A file is a hard link to the blob store's
// immutable object when the store keeps its objects on this disk, else a hard link
// into the cache (UseCache), which fetches each checksum once and checks the bytes
// against it; a streamed copy otherwise.
func (s *Service) Inject(ctx context.Context, k store.SessionKey, dir string) ([]File, error) {
	files, _, err := s.Files(ctx, k)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		dst := filepath.Join(dir, f.Name)
		l, isLinker := s.blobs.(linker)
		if isLinker {
			if src, _, err := l.ObjectPath(ctx, f.Key); err == nil && os.Link(src, dst) == nil {
				continue
			}
		}
		if s.cache != nil && !isLinker && f.SHA256 != "" {
			if err := s.cache.Link(ctx, f.SHA256, f.Bytes, dst, s.source(f.Key)); err != nil {
				return nil, fmt.Errorf("session file %s: %w", f.Name, err)
			}
			continue
		}
		if err := s.copyOut(ctx, f, dst); err != nil {
			return nil, fmt.Errorf("session file %s: %w", f.Name, err)
		}
	}
	return files, nil
}

// source reads the bytes of key from the blob store, for the cache.
func (s *Service) source(key string) blobcache.Source {
	return func(ctx context.Context) (io.ReadCloser, error) {
		rc, _, err := s.blobs.Get(ctx, key, 0, -1)
		return rc, err
	}
}

func (s *Service) copyOut(ctx context.Context, f File, dst string) error {
	rc, _, err := s.blobs.Get(ctx, f.Key, 0, -1)
	if err != nil {
		return err
	}
	defer rc.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	// Checked against the recorded checksum: bytes changed in the store fail the run's
	// start instead of reaching the tool.
	if _, err := io.Copy(out, hashcopy.Verify(rc, f.Bytes, f.SHA256)); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}

// Clear removes the session's files and reports what it removed.
func (s *Service) Clear(ctx context.Context, k store.SessionKey) (int, int64, error) {
	set, err := s.st.SessionFiles(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	return s.remove(ctx, set, time.Time{})
}

// remove deletes set if it is still current and unused since unusedSince (zero: now).
func (s *Service) remove(ctx context.Context, set store.FileSet, unusedSince time.Time) (int, int64, error) {
	ok, err := s.st.DeleteSessionFiles(ctx, set.SessionKey, set.SetID, unusedSince)
	if err != nil || !ok {
		return 0, 0, err
	}
	return max(s.deleteBlobs(ctx, set), 1), set.Bytes, nil
}

// deleteBlobs removes a set's bytes; a failure leaves blobs the janitor's sweep finds.
func (s *Service) deleteBlobs(ctx context.Context, set store.FileSet) int {
	var files []File
	json.Unmarshal([]byte(set.Files), &files)
	for _, f := range files {
		if err := s.blobs.Delete(context.WithoutCancel(ctx), f.Key); err != nil && !errors.Is(err, blob.ErrNotFound) {
			s.log.Warn("deleting a session file", "key", f.Key, "error", err)
		}
	}
	return len(files)
}

// Expired is what one expiry pass removed.
type Expired struct {
	Sets  int
	Files int
	Bytes int64
}

// Expire removes every file set not accessed for the TTL.
func (s *Service) Expire(ctx context.Context) (Expired, error) {
	var out Expired
	for {
		cutoff := s.now().Add(-s.ttl)
		stale, err := s.st.StaleSessionFiles(ctx, cutoff, 200)
		if err != nil || len(stale) == 0 {
			return out, err
		}
		for _, set := range stale {
			n, b, err := s.remove(ctx, set, cutoff)
			if err != nil {
				return out, err
			}
			if n > 0 || b > 0 {
				out.Sets++
				out.Files += n
				out.Bytes += b
			}
		}
		if len(stale) < 200 {
			return out, nil
		}
	}
}

// SweepOrphans deletes the blobs under sessions/ of sets that no session refers to: what
// a crash between storing a set and recording it leaves, or a failed delete. Sets that
// Replace is storing in this process are left alone, and so is any blob younger than
// minAge, which covers Replace calls of other servers sharing the blob store (0 when no
// other server writes to it). It returns how many blobs it deleted.
func (s *Service) SweepOrphans(ctx context.Context, minAge time.Duration) (int, error) {
	// Blobs, then the sets in progress, then the rows: a set seen in the blob store that
	// is no longer in progress has its row by now, or is debris.
	infos, err := s.blobs.List(ctx, "sessions/")
	if err != nil {
		return 0, fmt.Errorf("listing session files: %w", err)
	}
	s.mu.Lock()
	inProgress := make(map[string]bool, len(s.replacing))
	for id := range s.replacing {
		inProgress[id] = true
	}
	s.mu.Unlock()
	current, err := s.st.SessionFileSetIDs(ctx)
	if err != nil {
		return 0, err
	}
	young := s.now().Add(-minAge)
	removed := 0
	for _, info := range infos {
		// sessions/{tool}/{user}/{context}/{set}/{file}; any other key under sessions/
		// belongs to no set.
		set := ""
		if parts := strings.Split(info.Key, "/"); len(parts) == 6 {
			set = parts[4]
		}
		if current[set] || inProgress[set] || (minAge > 0 && info.ModTime.After(young)) {
			continue
		}
		err := s.blobs.Delete(ctx, info.Key)
		if errors.Is(err, blob.ErrNotFound) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("deleting an orphan session file %s: %w", info.Key, err)
		}
		removed++
	}
	return removed, nil
}
