package fsblob

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
)

// pointer is the JSON file under keys/ that names the object stored under a key.
type pointer struct {
	Object      string    `json:"object"`
	Size        int64     `json:"size"`
	Checksum    string    `json:"checksum"`
	ContentType string    `json:"content_type,omitempty"`
	ModTime     time.Time `json:"mod_time"`
}

func (p pointer) info(key string) blob.Info {
	return blob.Info{
		Key:         key,
		Size:        p.Size,
		Checksum:    p.Checksum,
		ContentType: p.ContentType,
		ModTime:     p.ModTime,
	}
}

// pointerPath is the pointer file of a valid key.
func (s *Store) pointerPath(key string) string {
	return filepath.Join(s.keys, filepath.FromSlash(key)+pointerSuffix)
}

// readKey reads the pointer of key, mapping a missing pointer to blob.ErrNotFound.
func (s *Store) readKey(key string) (pointer, error) {
	p, err := readPointer(s.pointerPath(key))
	if err != nil {
		return pointer{}, notFound(err)
	}
	return p, nil
}

func readPointer(path string) (pointer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return pointer{}, err
	}
	var p pointer
	if err := json.Unmarshal(data, &p); err != nil {
		return pointer{}, fmt.Errorf("pointer %s: %w", path, err)
	}
	// The object name is joined to objects/; refuse anything but a plain file name.
	if p.Object == "" || p.Object == "." || p.Object == ".." || filepath.Base(p.Object) != p.Object {
		return pointer{}, fmt.Errorf("pointer %s: bad object name %q", path, p.Object)
	}
	return p, nil
}

// writePointerTemp writes p to the new fsynced file path and returns its path.
func writePointerTemp(path string, p pointer) (string, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// notFound turns a missing-file error into blob.ErrNotFound, without the file path, and
// leaves other errors alone.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return blob.ErrNotFound
	}
	return err
}

// mkdirAll creates dir and its missing parents, fsyncing the parent of each directory it
// creates so that the new entries survive a crash. s.mu must be held.
func (s *Store) mkdirAll(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := s.mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, dirPerm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return syncDir(parent)
}

// syncDir fsyncs a directory so that renames and removals in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
