package staging

import (
	"context"
	"errors"
	"io"
	"mime"
	"path"
	"time"

	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// The intake: every way a file enters the staging area (POST and PUT /api/v1/files, a
// resumable upload's creation, a sandbox's publish) describes it as an Intake and hands it
// to Receive or BeginUpload, so that one set of rules reads them all (docs/api.md "Staged
// files"): the ttl, the declared or guessed content type, the size and quota limits, the
// key and the name. Put and CreateUpload store what the intake has read, and commit counts
// every stored file's bytes in skrip_bytes_uploaded_total.

// ErrInvalid means a file's ttl or content type is not valid, or its bytes are not as
// long as declared (400).
var ErrInvalid = errors.New("invalid file")

// NoSize is an Intake's Size when the length is not declared before the bytes: a stream
// that ends where it ends.
const NoSize = -1

// Intake is a file about to be staged, as its sender describes it.
type Intake struct {
	OwnerID string
	// Key is "" for a fresh files/f_<ULID>; a chosen key must be under files/.
	Key string
	// Name is the file's original name, for Content-Disposition; a path keeps its base
	// name, without control characters.
	Name string
	// ContentType is the type the sender declared, which must be a media type; with none
	// declared ("") it is guessed from Name (GuessType).
	ContentType string
	// TTL is the file's ttl as sent (90m, 24h, 7d): "" keeps it until it is deleted.
	TTL string
	// Size is the length declared before the bytes, or NoSize. A declared length over a
	// limit is refused before a byte moves, and bytes of another length store nothing.
	Size int64
	// Cond is the write's condition on the file under Key (If-Match, If-None-Match),
	// checked before a byte moves and again, atomically, when the file is committed.
	Cond Cond
}

// Receive stages body as the file in describes. Anything in refused, a body over a limit,
// one that fails halfway or a cancelled ctx stores nothing, and a file already under the
// key stays as it was.
func (s *Service) Receive(ctx context.Context, in Intake, body io.Reader) (store.File, error) {
	up, err := read(in)
	if err != nil {
		return store.File{}, err
	}
	up.Body = body
	return s.Put(ctx, up)
}

// BeginUpload starts a resumable upload of the file in describes, whose Size must be
// declared: its bytes come later (WriteUpload), and its file is made when they are in
// (FinishUpload).
func (s *Service) BeginUpload(ctx context.Context, in Intake) (store.Upload, error) {
	if in.Size < 0 {
		return store.Upload{}, errs.New(ErrInvalid, map[string]any{"field": "size"}, "a resumable upload needs its length before its bytes")
	}
	up, err := read(in)
	if err != nil {
		return store.Upload{}, err
	}
	return s.CreateUpload(ctx, NewUpload{OwnerID: up.OwnerID, Key: up.Key, Name: up.Name, ContentType: up.ContentType, TTL: up.TTL, Size: in.Size})
}

// read checks in's fields and returns the upload they describe, without its body.
func read(in Intake) (Upload, error) {
	ttl, err := ParseTTL(in.TTL)
	if err != nil {
		return Upload{}, err
	}
	ct, err := contentType(in.ContentType, in.Name)
	if err != nil {
		return Upload{}, err
	}
	up := Upload{OwnerID: in.OwnerID, Key: in.Key, Name: in.Name, ContentType: ct, TTL: ttl, Cond: in.Cond}
	if in.Size >= 0 {
		up.sized, up.size = true, in.Size
	}
	return up, nil
}

// ParseTTL reads a ttl as a client sends it: a positive duration (90m, 24h, 7d), or none
// ("") for a file kept until it is deleted.
func ParseTTL(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := config.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errs.New(ErrInvalid, map[string]any{"field": "ttl", "value": v},
			"ttl %q is not a positive duration such as 90m, 24h or 7d", v)
	}
	return d, nil
}

// contentType is the type a file is stored with: the one declared, which must be a media
// type, or with none the one its name suggests.
func contentType(declared, name string) (string, error) {
	if declared == "" {
		return GuessType(name), nil
	}
	if _, _, err := mime.ParseMediaType(declared); err != nil {
		return "", errs.New(ErrInvalid, map[string]any{"field": "content_type", "value": declared},
			"content type %q is not a media type such as text/csv", declared)
	}
	return declared, nil
}

// GuessType is the media type a file name's extension suggests, or
// application/octet-stream.
func GuessType(name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}
