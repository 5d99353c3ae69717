// Package fsblob is the local-filesystem blob.Store. It owns one directory tree: immutable
// object files under objects/, one small JSON pointer per key under keys/, and in-flight
// uploads under tmp/. A Put becomes visible by atomically renaming its pointer into place.
// One process at a time holds the tree, under a lock on its lock file.
package fsblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/hashcopy"
)

const (
	objectsDir = "objects"
	keysDir    = "keys"
	tmpDir     = "tmp"
	lockFile   = "lock"

	// pointerSuffix ends every pointer file name. It cannot appear in a key, so the pointer
	// of files/a ("files/a@") never collides with the directory holding files/a/b.
	pointerSuffix = "@"

	copyBufferSize = 256 << 10
	dirPerm        = 0o750
	// objectPerm lets a hard link of an object (see ObjectPath) be read inside a sandbox
	// running as another user; the store's own directories stay closed to others.
	objectPerm = 0o444 // immutable: never written again, readable in sandboxes through hard links
)

// Store keeps objects in a directory tree on the local filesystem. It is safe for
// concurrent use by one process; a second process (or Store) opening the same root is
// refused while the first holds it.
type Store struct {
	root    string
	objects string
	keys    string
	tmp     string

	// lock holds the root's lock file, locked, until Close. exclusive is false only on a
	// filesystem without locks, where Sweep then leaves young leftovers alone.
	lock      *os.File
	exclusive bool

	// mu serialises changes to the keys/ tree: pointer swaps, pointer removal, and the
	// creation and pruning of key directories. Streaming and reads never hold it.
	mu sync.Mutex

	// puts holds the version id of every Put in progress: its tmp/obj-<id> and
	// tmp/ptr-<id> and its objects/<id> are not leftovers, whatever their age.
	puts blob.InFlight
}

var _ blob.Store = (*Store)(nil)

// ErrLocked means another process (or Store) holds the blob directory.
var ErrLocked = errors.New("the blob directory is in use by another skrip process; two servers cannot share one")

// New opens the store rooted at root, creating its directories when they are missing,
// and locks it until Close. It fails with ErrLocked when another process holds it.
func New(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("fsblob: root %q: %w", root, err)
	}
	s := &Store{
		root:    abs,
		objects: filepath.Join(abs, objectsDir),
		keys:    filepath.Join(abs, keysDir),
		tmp:     filepath.Join(abs, tmpDir),
	}
	for _, dir := range []string{s.objects, s.keys, s.tmp} {
		if err := os.MkdirAll(dir, dirPerm); err != nil {
			return nil, fmt.Errorf("fsblob: create %s: %w", dir, err)
		}
	}
	if err := s.lockRoot(); err != nil {
		return nil, err
	}
	return s, nil
}

// lockRoot takes an exclusive lock on the root's lock file, so that the tree's temp
// files and unreferenced objects are known to be this process's: Sweep can then remove
// a crash's leftovers at once. A filesystem without locks is used unlocked.
func (s *Store) lockRoot() error {
	f, err := os.OpenFile(filepath.Join(s.root, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("fsblob: lock file: %w", err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		s.lock, s.exclusive = f, true
		return nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return fmt.Errorf("%s: %w", s.root, ErrLocked)
	default: // ENOLCK, EOPNOTSUPP, …: no locks here
		f.Close()
		return nil
	}
}

// startPut picks the id of a new object version and marks it in progress until endPut.
func (s *Store) startPut() string {
	id := ulid.Make().String()
	s.puts.Start(id)
	return id
}

func (s *Store) endPut(id string) { s.puts.End(id) }

// Put streams r into a temporary file while hashing it, then makes it the object under key.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (blob.Info, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, fmt.Errorf("fsblob: put %s: %w", key, err)
	}
	id := s.startPut()
	defer s.endPut(id)
	tmpObj, size, sum, err := s.writeTemp(ctx, id, r)
	if err != nil {
		return blob.Info{}, fmt.Errorf("fsblob: put %s: %w", key, err)
	}
	p := pointer{
		Object:      id,
		Size:        size,
		Checksum:    blob.FormatSHA256(sum),
		ContentType: opts.ContentType,
		ModTime:     time.Now().UTC().Round(0),
	}
	if err := s.commit(key, tmpObj, p); err != nil {
		return blob.Info{}, fmt.Errorf("fsblob: put %s: %w", key, err)
	}
	return p.info(key), nil
}

// writeTemp copies r into tmp/obj-<id>, checking ctx between chunks, and fsyncs it. On
// any error the file is removed.
func (s *Store) writeTemp(ctx context.Context, id string, r io.Reader) (path string, size int64, sum []byte, err error) {
	f, err := os.OpenFile(filepath.Join(s.tmp, "obj-"+id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", 0, nil, err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(objectPerm); err != nil {
		return "", 0, nil, err
	}
	size, sum, err = hashcopy.Copy(ctx, &writeback{f: f}, r)
	if err != nil {
		return "", 0, nil, err
	}
	// A cancellation that races the last read still stores nothing.
	if err := ctx.Err(); err != nil {
		return "", 0, nil, err
	}
	if err := f.Sync(); err != nil {
		return "", 0, nil, err
	}
	if err := f.Close(); err != nil {
		return "", 0, nil, err
	}
	return f.Name(), size, sum, nil
}

// writebackBytes is how much of an object is written before the kernel is asked to start
// putting it on the disk.
const writebackBytes = 8 << 20

// writeback writes to f and asks the kernel to start writing each writebackBytes to the
// disk once they are written, while the rest is still arriving. Without it the disk sat
// idle until the fsync after the last byte, which then waited for the whole object
// (about 30 ms of a 100 MiB upload's 200 here); now it waits for the last few MiB.
type writeback struct {
	f       *os.File
	off     int64 // bytes written
	pending int64 // bytes written since the last startWriteback
}

func (w *writeback) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.off += int64(n)
	if w.pending += int64(n); w.pending >= writebackBytes {
		startWriteback(w.f, w.off-w.pending, w.pending)
		w.pending = 0
	}
	return n, err
}

// commit moves the finished temp file into objects/, swaps the key's pointer to it and
// removes the object the old pointer named. Until the swap nothing is visible; if commit
// fails before it, the new object is removed.
func (s *Store) commit(key, tmpObj string, p pointer) (err error) {
	ptrTmp, err := writePointerTemp(filepath.Join(s.tmp, "ptr-"+p.Object), p)
	if err != nil {
		_ = os.Remove(tmpObj)
		return err
	}
	obj := filepath.Join(s.objects, p.Object)
	if err := os.Rename(tmpObj, obj); err != nil {
		_ = os.Remove(tmpObj)
		_ = os.Remove(ptrTmp)
		return err
	}
	swapped := false
	defer func() {
		if !swapped {
			_ = os.Remove(obj)
			_ = os.Remove(ptrTmp)
		}
	}()
	// The object must be durable before any pointer names it.
	if err := syncDir(s.objects); err != nil {
		return err
	}

	ptrPath := s.pointerPath(key)
	s.mu.Lock()
	if err := s.mkdirAll(filepath.Dir(ptrPath)); err != nil {
		s.mu.Unlock()
		return err
	}
	old, oldErr := readPointer(ptrPath)
	if err := os.Rename(ptrTmp, ptrPath); err != nil {
		s.mu.Unlock()
		return err
	}
	swapped = true
	s.mu.Unlock()

	if err := syncDir(filepath.Dir(ptrPath)); err != nil {
		// The new pointer is in place; keep the old object, Sweep reclaims it later.
		return err
	}
	if oldErr == nil && old.Object != p.Object {
		_ = os.Remove(filepath.Join(s.objects, old.Object))
	}
	return nil
}

// Get opens key's object and positions it at off.
func (s *Store) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, blob.Info, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, blob.Info{}, err
	}
	if off < 0 {
		return nil, blob.Info{}, fmt.Errorf("fsblob: get %s: negative offset %d", key, off)
	}
	f, p, err := s.open(ctx, key)
	if err != nil {
		return nil, blob.Info{}, fmt.Errorf("fsblob: get %s: %w", key, err)
	}
	info := p.info(key)
	if off >= p.Size {
		_ = f.Close()
		return io.NopCloser(strings.NewReader("")), info, nil
	}
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, blob.Info{}, fmt.Errorf("fsblob: get %s: %w", key, err)
		}
	}
	if n < 0 {
		return f, info, nil
	}
	return limitedFile{Reader: io.LimitReader(f, n), Closer: f}, info, nil
}

// open reads key's pointer and opens the object it names. An overwrite may remove that
// object between the two steps, so a missing object file means: read the pointer again.
func (s *Store) open(ctx context.Context, key string) (*os.File, pointer, error) {
	const attempts = 5
	for range attempts {
		if err := ctx.Err(); err != nil {
			return nil, pointer{}, err
		}
		p, err := s.readKey(key)
		if err != nil {
			return nil, pointer{}, err
		}
		f, err := os.Open(filepath.Join(s.objects, p.Object))
		if err == nil {
			return f, p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, pointer{}, err
		}
	}
	return nil, pointer{}, fmt.Errorf("object file of %s keeps disappearing or is missing: %w", key, blob.ErrNotFound)
}

// Stat reads key's pointer.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, fmt.Errorf("fsblob: stat %s: %w", key, err)
	}
	p, err := s.readKey(key)
	if err != nil {
		return blob.Info{}, fmt.Errorf("fsblob: stat %s: %w", key, err)
	}
	return p.info(key), nil
}

// Delete removes key's pointer, then its object, and prunes key directories left empty.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fsblob: delete %s: %w", key, err)
	}
	ptrPath := s.pointerPath(key)
	s.mu.Lock()
	p, err := readPointer(ptrPath)
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("fsblob: delete %s: %w", key, notFound(err))
	}
	if err := os.Remove(ptrPath); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("fsblob: delete %s: %w", key, notFound(err))
	}
	synced := s.prune(filepath.Dir(ptrPath))
	s.mu.Unlock()

	if err := syncDir(synced); err != nil {
		return fmt.Errorf("fsblob: delete %s: %w", key, err)
	}
	if err := os.Remove(filepath.Join(s.objects, p.Object)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("fsblob: delete %s: remove object: %w", key, err)
	}
	return nil
}

// prune removes dir and its empty parents, stopping at the top-level key directories
// (keys/files, keys/runs, keys/sessions). It returns the deepest directory that still
// exists, whose entries changed. s.mu must be held.
func (s *Store) prune(dir string) string {
	for {
		rel, err := filepath.Rel(s.keys, dir)
		if err != nil || !strings.Contains(filepath.ToSlash(rel), "/") {
			return dir
		}
		if err := os.Remove(dir); err != nil {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// List walks the key directory that prefix names and returns the keys starting with prefix.
func (s *Store) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	dir, ok := prefixDir(prefix)
	if !ok {
		return []blob.Info{}, nil
	}
	start := filepath.Join(s.keys, filepath.FromSlash(dir))
	out := []blob.Info{}
	err := filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			// Entries removed while walking are simply gone.
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), pointerSuffix) {
			return nil
		}
		rel, err := filepath.Rel(s.keys, path)
		if err != nil {
			return err
		}
		key := strings.TrimSuffix(filepath.ToSlash(rel), pointerSuffix)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		p, err := readPointer(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, p.info(key))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fsblob: list %q: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// prefixDir returns the directory, relative to keys/, that holds every key starting with
// prefix: everything before the last "/". ok is false when no key can start with prefix
// because that directory part breaks the key grammar.
func prefixDir(prefix string) (dir string, ok bool) {
	i := strings.LastIndex(prefix, "/")
	if i < 0 {
		return "", true
	}
	dir = prefix[:i]
	for _, seg := range strings.Split(dir, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.Trim(seg, keyChars) != "" {
			return "", false
		}
	}
	return dir, true
}

const keyChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

// Ping checks that the store's directories are still there.
func (s *Store) Ping(ctx context.Context) error {
	for _, dir := range []string{s.root, s.objects, s.keys, s.tmp} {
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("fsblob: ping: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("fsblob: ping: %s is not a directory", dir)
		}
	}
	return nil
}

// Close releases the lock on the root. The store must not be used after.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close()
	s.lock = nil
	return err
}

// ObjectPath returns the absolute path of the immutable file holding key's bytes, so a
// caller can hard-link it (for example into a session snapshot) without copying. The file
// must never be written, truncated or renamed through that path: other readers share it.
// A concurrent overwrite or Delete may unlink the path at any moment; a caller whose link
// fails with fs.ErrNotExist should call ObjectPath again.
func (s *Store) ObjectPath(ctx context.Context, key string) (string, blob.Info, error) {
	if err := blob.ValidateKey(key); err != nil {
		return "", blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return "", blob.Info{}, fmt.Errorf("fsblob: object path %s: %w", key, err)
	}
	p, err := s.readKey(key)
	if err != nil {
		return "", blob.Info{}, fmt.Errorf("fsblob: object path %s: %w", key, err)
	}
	return filepath.Join(s.objects, p.Object), p.info(key), nil
}

// limitedFile reads at most n bytes of an open object file and closes the file.
type limitedFile struct {
	io.Reader
	io.Closer
}
