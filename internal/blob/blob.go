// Package blob owns file bytes: the Store interface every backend implements, the key
// grammar of docs/spec.md §4 and the sentinel errors. Metadata about who owns a blob lives in the
// SQL store; this package only moves and checks bytes.
package blob

import (
	"context"
	"errors"
	"io"
	"time"
)

// Sentinel errors. Backends wrap them with %w so callers can use errors.Is.
var (
	// ErrNotFound means no object is stored under the key.
	ErrNotFound = errors.New("not found")
	// ErrInvalidKey means the key does not match the key grammar.
	ErrInvalidKey = errors.New("invalid key")
)

// Info describes one stored object.
type Info struct {
	Key         string
	Size        int64
	Checksum    string // "sha256:<hex>", the same on every backend
	ContentType string
	ModTime     time.Time
}

// PutOptions are the optional attributes of a Put.
type PutOptions struct {
	ContentType string
	// FileKey, Owner and Name say what the bytes are to someone reading the store with
	// other tools: the staged file's key, its owner's user id and its original name.
	// skrip never reads them back; natsblob keeps them as the object's metadata and
	// description, fsblob has no place for them.
	FileKey string
	Owner   string
	Name    string
}

// Store is a flat namespace of objects addressed by key. Every method is safe for
// concurrent use.
type Store interface {
	// Put streams r into key, replacing any object there, and computes the sha256 while
	// streaming. It is all or nothing: when r returns an error, or ctx ends, Put stores
	// nothing, leaves any previous object under key as it was, leaves no temporary data
	// behind, and returns an error wrapping r's error (or ctx.Err()).
	Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (Info, error)
	// Get opens key for reading from byte offset off. When n >= 0 at most n bytes are
	// returned; n < 0 reads to the end. The caller closes the reader.
	Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, Info, error)
	// Stat describes key without reading it.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes key. Deleting a missing key returns ErrNotFound.
	Delete(ctx context.Context, key string) error
	// List returns every object whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Ping reports whether the backend answers; /readyz uses it.
	Ping(ctx context.Context) error
	// Close releases connections and files held by the store.
	Close() error
}
