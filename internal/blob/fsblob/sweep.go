package fsblob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SweepAge is how old a leftover must be before Sweep removes it when the root could not
// be locked (a filesystem without locks), so that another process's upload in flight is
// not taken for one. With the lock, leftovers go at once.
const SweepAge = time.Hour

// Sweep removes what a crash (or a failed clean-up) leaves behind: files in tmp/ and
// object files that no pointer names, unless a Put of this store is writing them. The
// root's lock makes every other such file a leftover, so it goes at once; unlocked, only
// once older than SweepAge. It returns how many files it removed.
func (s *Store) Sweep(ctx context.Context) (removed int, err error) {
	cutoff := time.Now().Add(-SweepAge)
	if s.exclusive {
		cutoff = time.Now().Add(time.Hour) // everything not in flight
	}

	// Each step reads the directory, then the Puts in progress: a file seen there was
	// created by a Put that was already in progress, so if that Put is over now, the file
	// is a leftover (or it has since been renamed or removed, which os.Remove shrugs off).
	tmps, err := os.ReadDir(s.tmp)
	if err != nil {
		return 0, fmt.Errorf("fsblob: sweep: %w", err)
	}
	inPut := s.puts.Snapshot()
	for _, e := range tmps {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		_, id, _ := strings.Cut(e.Name(), "-")
		if inPut[id] {
			continue
		}
		if ok, err := removeIfOlder(filepath.Join(s.tmp, e.Name()), cutoff); err != nil {
			return removed, fmt.Errorf("fsblob: sweep: %w", err)
		} else if ok {
			removed++
		}
	}

	// Objects are read before the pointers: an object committed meanwhile then shows up
	// as referenced. One whose Put is still in progress may not have its pointer yet.
	objs, err := os.ReadDir(s.objects)
	if err != nil {
		return removed, fmt.Errorf("fsblob: sweep: %w", err)
	}
	inPut = s.puts.Snapshot()
	referenced, err := s.referencedObjects(ctx)
	if err != nil {
		return removed, fmt.Errorf("fsblob: sweep: %w", err)
	}
	for _, e := range objs {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if referenced[e.Name()] || inPut[e.Name()] {
			continue
		}
		if ok, err := removeIfOlder(filepath.Join(s.objects, e.Name()), cutoff); err != nil {
			return removed, fmt.Errorf("fsblob: sweep: %w", err)
		} else if ok {
			removed++
		}
	}
	return removed, nil
}

// referencedObjects reads every pointer and returns the set of object names they hold.
func (s *Store) referencedObjects(ctx context.Context) (map[string]bool, error) {
	refs := map[string]bool{}
	err := filepath.WalkDir(s.keys, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
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
		p, err := readPointer(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		refs[p.Object] = true
		return nil
	})
	return refs, err
}

// removeIfOlder removes path when its modification time is before cutoff. A path that is
// gone already is not counted.
func removeIfOlder(path string, cutoff time.Time) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.ModTime().Before(cutoff) {
		return false, nil
	}
	if err := os.RemoveAll(path); err != nil {
		return false, err
	}
	return true, nil
}
