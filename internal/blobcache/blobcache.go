// Package blobcache keeps files on this machine's disk by their SHA-256 and hard-links
// them into run input directories: a file fetched once is given to every later run for
// the cost of a link, however large it is. A server whose blob store is not on its own
// disk keeps session files in one, and a cluster's worker the files of its runs.
package blobcache

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skrip-dev/skrip/internal/hashcopy"
)

// ErrMismatch means the bytes a Source gave are not those of the checksum (or the size)
// they were asked for: they are never kept, nor given to a run.
var ErrMismatch = errors.New("bytes do not match their checksum")

// Source opens the bytes of a file the cache does not have yet.
type Source func(ctx context.Context) (io.ReadCloser, error)

// Config places and sizes a cache.
type Config struct {
	Dir      string // the cache's own directory, on the same filesystem as the input directories it links into
	MaxBytes int64  // past it, the files used least recently go
	// Hits and Misses, when set, count the files found in the cache and the files
	// fetched into it.
	Hits, Misses prometheus.Counter
}

// Cache is a directory of immutable (0444) files named by their checksum. A file is
// checked against its checksum once, when it is fetched, and never written again:
// what is in the cache under a name is the bytes of that name.
type Cache struct {
	cfg Config

	mu      sync.Mutex
	filling map[string]*fill  // checksums being fetched, so that two runs fetch once
	pinned  map[string]int    // files being linked or read now: a trim leaves them
	inodes  map[fileID]string // the files of the cache by inode, for Checksum

	trimming sync.Mutex // one trim at a time
}

type fill struct {
	done chan struct{}
	err  error
}

type fileID struct{ dev, ino uint64 }

var checksum = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Open opens the cache in cfg.Dir, making the directory, removing what a fetch cut
// short by a crash left, and trimming it to cfg.MaxBytes.
func Open(cfg Config) (*Cache, error) {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	tmps, _ := filepath.Glob(filepath.Join(cfg.Dir, "*.tmp-*"))
	for _, t := range tmps {
		os.Remove(t)
	}
	c := &Cache{cfg: cfg, filling: map[string]*fill{}, pinned: map[string]int{}, inodes: map[fileID]string{}}
	c.Trim()
	return c, nil
}

func (c *Cache) path(sha string) string { return filepath.Join(c.cfg.Dir, sha) }

// Link makes dst the file of checksum sha and size bytes (negative: not known, and a
// file in the cache is then not checked against a size), read-only, fetching it from src first when the cache does not have it. dst is a hard
// link of the cache's file, or a copy of it on another filesystem. Bytes that do not
// match sha or size give an ErrMismatch error and are neither kept nor linked.
func (c *Cache) Link(ctx context.Context, sha string, size int64, dst string, src Source) error {
	p, fetched, err := c.get(ctx, sha, size, src)
	if err != nil {
		return err
	}
	err = os.Link(p, dst)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		err = copyFile(p, dst) // another filesystem
	}
	c.unpin(sha)
	if fetched {
		c.Trim()
	}
	return err
}

// Read returns the bytes of the file of checksum sha and size bytes, fetching it from
// src first when the cache does not have it.
func (c *Cache) Read(ctx context.Context, sha string, size int64, src Source) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("reading %s: the size must be known", sha)
	}
	p, fetched, err := c.get(ctx, sha, size, src)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	c.unpin(sha)
	if fetched {
		c.Trim()
	}
	if err == nil && int64(len(b)) != size {
		err = fmt.Errorf("%w: %s holds %d bytes, not %d", ErrMismatch, sha, len(b), size)
	}
	return b, err
}

// Checksum returns the checksum of the file fi describes (from os.Stat or os.Lstat)
// when it is a hard link of a file in the cache, whose bytes were checked against
// that checksum when they were fetched; false for any other file.
func (c *Cache) Checksum(fi fs.FileInfo) (string, bool) {
	id, ok := idOf(fi)
	if !ok || !fi.Mode().IsRegular() {
		return "", false
	}
	c.mu.Lock()
	sha, ok := c.inodes[id]
	c.mu.Unlock()
	if !ok {
		return "", false
	}
	// The inode is the cache's file only while that file is there: once it went, its
	// number may be another file's.
	cur, err := os.Lstat(c.path(sha))
	if err != nil || !os.SameFile(cur, fi) {
		return "", false
	}
	return sha, true
}

// get returns the cache's path of sha, pinned until the caller unpins it, fetching it
// when missing; fetched reports a fetch.
func (c *Cache) get(ctx context.Context, sha string, size int64, src Source) (p string, fetched bool, err error) {
	if !checksum.MatchString(sha) {
		return "", false, fmt.Errorf("%q is not a sha256 checksum", sha)
	}
	p = c.path(sha)
	c.pin(sha)
	for {
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode().IsRegular() && (size < 0 || fi.Size() == size) {
			c.remember(fi, sha)
			if !fetched {
				count(c.cfg.Hits)
				now := time.Now()
				os.Chtimes(p, now, now) // a trim goes by last use
			}
			return p, fetched, nil
		}
		if err == nil {
			// Not what was checked in: changed behind the cache's back. It goes, and the
			// right bytes are fetched.
			os.Remove(p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			c.unpin(sha)
			return "", false, err
		}
		if fetched {
			c.unpin(sha)
			return "", false, fmt.Errorf("the cache's %s went as soon as it was fetched", sha)
		}
		c.mu.Lock()
		f := c.filling[sha]
		if f == nil {
			f = &fill{done: make(chan struct{})}
			c.filling[sha] = f
			c.mu.Unlock()
			f.err = c.fetch(ctx, sha, size, src)
			c.mu.Lock()
			delete(c.filling, sha)
			c.mu.Unlock()
			close(f.done)
			if f.err != nil {
				c.unpin(sha)
				return "", false, f.err
			}
			count(c.cfg.Misses)
			fetched = true
			continue
		}
		c.mu.Unlock()
		select {
		case <-f.done:
			// A fetch that its own caller gave up on is tried again by this one.
			if f.err != nil && !(isCancel(f.err) && ctx.Err() == nil) {
				c.unpin(sha)
				return "", false, f.err
			}
		case <-ctx.Done():
			c.unpin(sha)
			return "", false, ctx.Err()
		}
	}
}

// fetch copies sha from src into the cache, all or nothing: the bytes go to a temporary
// file, are checked against sha and size, made read-only and synced, and only then get
// their name.
func (c *Cache) fetch(ctx context.Context, sha string, size int64, src Source) error {
	rc, err := src(ctx)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", sha, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(c.cfg.Dir, sha[:8]+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, sum, err := hashcopy.Copy(ctx, tmp, rc)
	switch got := hex.EncodeToString(sum); {
	case err != nil:
	case got != sha:
		err = fmt.Errorf("%w: the bytes fetched for %s have checksum %s", ErrMismatch, sha, got)
	case size >= 0 && n != size:
		err = fmt.Errorf("%w: %d bytes fetched for %s, not %d", ErrMismatch, n, sha, size)
	}
	if err == nil {
		err = tmp.Chmod(0o444)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fetching %s: %w", sha, err)
	}
	return os.Rename(tmp.Name(), c.path(sha))
}

func (c *Cache) pin(sha string) {
	c.mu.Lock()
	c.pinned[sha]++
	c.mu.Unlock()
}

func (c *Cache) unpin(sha string) {
	c.mu.Lock()
	if c.pinned[sha]--; c.pinned[sha] <= 0 {
		delete(c.pinned, sha)
	}
	c.mu.Unlock()
}

func (c *Cache) remember(fi fs.FileInfo, sha string) {
	if id, ok := idOf(fi); ok {
		c.mu.Lock()
		c.inodes[id] = sha
		c.mu.Unlock()
	}
}

// Trim removes the files used least recently while the cache holds more than its
// MaxBytes. A file being linked or read is left; one already linked into a run's
// directory stays there (the run holds its own link), only the cache's name goes.
func (c *Cache) Trim() {
	c.trimming.Lock()
	defer c.trimming.Unlock()
	type entry struct {
		sha  string
		fi   fs.FileInfo
		used time.Time
	}
	des, err := os.ReadDir(c.cfg.Dir)
	if err != nil {
		return
	}
	var all []entry
	var total int64
	for _, d := range des {
		if !checksum.MatchString(d.Name()) {
			continue
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			all = append(all, entry{d.Name(), fi, fi.ModTime()})
			total += fi.Size()
		}
	}
	if total <= c.cfg.MaxBytes {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	for _, e := range all {
		if total <= c.cfg.MaxBytes {
			break
		}
		c.mu.Lock()
		if c.pinned[e.sha] == 0 {
			if err := os.Remove(c.path(e.sha)); err == nil || errors.Is(err, fs.ErrNotExist) {
				total -= e.fi.Size()
				if id, ok := idOf(e.fi); ok && c.inodes[id] == e.sha {
					delete(c.inodes, id)
				}
			}
		}
		c.mu.Unlock()
	}
}

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true
}

func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func count(c prometheus.Counter) {
	if c != nil {
		c.Inc()
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
