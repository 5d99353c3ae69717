package worker

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
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/dispatch"
	"github.com/skrip-dev/skrip/internal/hashcopy"
	"github.com/skrip-dev/skrip/internal/metrics"
)

// Cache keeps the files runs are given (inputs, session files, scripts) on the
// worker's disk by checksum, and hard-links them into a run's input directory: a file
// the worker has seen is not fetched again, and giving it to a run costs a link, however
// large it is. Every file is checked against its checksum when it is fetched.
type Cache struct {
	dir     string
	max     int64
	work    blob.Store
	metrics *metrics.Metrics

	mu      sync.Mutex
	filling map[string]*fill // checksums being fetched, so that two runs fetch once
}

type fill struct {
	done chan struct{}
	err  error
}

var checksum = regexp.MustCompile(`^[0-9a-f]{64}$`)

// NewCache opens the cache in dir, holding up to max bytes (past it, the files used
// least recently go; a file linked into a running run stays there until it ends).
func NewCache(dir string, max int64, work blob.Store, m *metrics.Metrics) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// A fetch a crash cut short leaves a temporary file: it goes.
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp-*"))
	for _, t := range tmps {
		os.Remove(t)
	}
	return &Cache{dir: dir, max: max, work: work, metrics: m, filling: map[string]*fill{}}, nil
}

func (c *Cache) path(sha string) string { return filepath.Join(c.dir, sha) }

// Link makes dst the file with checksum sha, read-only, fetching it first when the
// cache does not have it.
func (c *Cache) Link(ctx context.Context, sha, dst string) error {
	p, err := c.get(ctx, sha)
	if err != nil {
		return err
	}
	if err := os.Link(p, dst); err == nil {
		return nil
	}
	// Another filesystem: a copy does.
	return copyFile(p, dst)
}

// Read returns the bytes with checksum sha, up to limit.
func (c *Cache) Read(ctx context.Context, sha string, limit int64) ([]byte, error) {
	p, err := c.get(ctx, sha)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s is over %d bytes", sha, limit)
	}
	return b, err
}

// get returns the cache's path of sha, fetching it when missing.
func (c *Cache) get(ctx context.Context, sha string) (string, error) {
	if !checksum.MatchString(sha) {
		return "", fmt.Errorf("%q is not a sha256 checksum", sha)
	}
	p := c.path(sha)
	for {
		if _, err := os.Stat(p); err == nil {
			c.metrics.CacheHits.Inc()
			now := time.Now()
			os.Chtimes(p, now, now) // the eviction goes by last use
			return p, nil
		}
		c.mu.Lock()
		f := c.filling[sha]
		if f == nil {
			f = &fill{done: make(chan struct{})}
			c.filling[sha] = f
			c.mu.Unlock()
			f.err = c.fetch(ctx, sha)
			c.mu.Lock()
			delete(c.filling, sha)
			c.mu.Unlock()
			close(f.done)
			if f.err != nil {
				return "", f.err
			}
			c.metrics.CacheMisses.Inc()
			c.evict()
			return p, nil
		}
		c.mu.Unlock()
		select {
		case <-f.done:
			if f.err != nil {
				return "", f.err
			}
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// fetch copies sha from the work bucket into the cache, all or nothing.
func (c *Cache) fetch(ctx context.Context, sha string) error {
	rc, _, err := c.work.Get(ctx, dispatch.CASKey(sha), 0, -1)
	if err != nil {
		return fmt.Errorf("fetching %s from the work bucket: %w", sha, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(c.dir, sha[:8]+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, sum, err := hashcopy.Copy(ctx, tmp, rc)
	if err == nil {
		err = tmp.Chmod(0o444)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fetching %s from the work bucket: %w", sha, err)
	}
	if got := hex.EncodeToString(sum); got != sha {
		return fmt.Errorf("the work bucket's %s has bytes of checksum %s", sha, got)
	}
	return os.Rename(tmp.Name(), c.path(sha))
}

// evict removes the files used least recently while the cache holds more than its cap.
func (c *Cache) evict() {
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var all []entry
	var total int64
	filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !checksum.MatchString(d.Name()) {
			return nil
		}
		if info, err := d.Info(); err == nil {
			all = append(all, entry{p, info.Size(), info.ModTime()})
			total += info.Size()
		}
		return nil
	})
	if total <= c.max {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	for _, e := range all {
		if total <= c.max {
			break
		}
		if err := os.Remove(e.path); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= e.size
		}
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
