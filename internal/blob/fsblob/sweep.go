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

// SweepAge is how old a temp file or an unreferenced object must be before Sweep removes
// it. Live uploads touch their temp file continuously, and a finished upload names its
// object in a pointer within moments of its last write, so anything this old is debris
// of a crash.
const SweepAge = time.Hour

// Sweep removes what a crash can leave behind: temp files older than SweepAge and object
// files older than SweepAge that no pointer names. It returns how many files it removed.
func (s *Store) Sweep(ctx context.Context) (removed int, err error) {
	cutoff := time.Now().Add(-SweepAge)

	tmps, err := os.ReadDir(s.tmp)
	if err != nil {
		return 0, fmt.Errorf("fsblob: sweep: %w", err)
	}
	for _, e := range tmps {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if ok, err := removeIfOlder(filepath.Join(s.tmp, e.Name()), cutoff); err != nil {
			return removed, fmt.Errorf("fsblob: sweep: %w", err)
		} else if ok {
			removed++
		}
	}

	// List objects before reading pointers: an object committed meanwhile then shows up
	// as referenced, and one that is not yet committed is too young to be removed.
	objs, err := os.ReadDir(s.objects)
	if err != nil {
		return removed, fmt.Errorf("fsblob: sweep: %w", err)
	}
	referenced, err := s.referencedObjects(ctx)
	if err != nil {
		return removed, fmt.Errorf("fsblob: sweep: %w", err)
	}
	for _, e := range objs {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if referenced[e.Name()] {
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

// removeIfOlder removes path when its modification time is before cutoff.
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
