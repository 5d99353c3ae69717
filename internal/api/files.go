package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/files"
	"github.com/skrip-dev/skrip/internal/store"
)

// fileJSON is FileInfo of SPEC §4.
type fileJSON struct {
	FileKey     string     `json:"file_key"`
	Name        string     `json:"name"`
	SizeBytes   int64      `json:"size_bytes"`
	ContentType string     `json:"content_type"`
	Checksum    string     `json:"checksum"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at"`
}

func toFileJSON(f store.File) fileJSON {
	return fileJSON{FileKey: f.Key, Name: f.OriginalName, SizeBytes: f.Size, ContentType: f.ContentType,
		Checksum: f.Checksum, CreatedAt: f.CreatedAt, ExpiresAt: f.ExpiresAt}
}

// maxFieldBytes caps each non-file field of a multipart upload.
const maxFieldBytes = 4096

// uploadFile takes a multipart body: an optional key, ttl and content_type field (or query
// parameter), then one file field whose bytes stream straight into the blob store.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	mr, err := r.MultipartReader()
	if err != nil {
		return errs.New(errInvalidRequest, nil, "send multipart/form-data with a field named file (or PUT the raw bytes to /api/v1/files/{key})")
	}
	fields := map[string]string{}
	q := r.URL.Query()
	for _, k := range []string{"key", "ttl", "content_type"} {
		if v := q.Get(k); v != "" {
			fields[k] = v
		}
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return errs.New(errInvalidRequest, nil, "the multipart body has no field named file")
		}
		if err != nil {
			return s.bodyError(err)
		}
		switch name := part.FormName(); name {
		case "key", "ttl", "content_type":
			b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
			if err != nil {
				return s.bodyError(err)
			}
			if len(b) > maxFieldBytes {
				return errs.New(errInvalidRequest, map[string]any{"field": name}, "field %q is longer than %d bytes", name, maxFieldBytes)
			}
			fields[name] = string(b)
		case "file":
			ct := fields["content_type"]
			if ct == "" {
				ct = partType(part.Header.Get("Content-Type"), part.FileName())
			}
			f, err := s.stage(r, u, fields, part.FileName(), ct, &lastPart{part: part, mr: mr})
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusCreated, toFileJSON(f))
			return nil
		default:
			return errs.New(errInvalidRequest, map[string]any{"field": name},
				"unknown field %q; an upload has the fields file, and optionally key, ttl and content_type before it", name)
		}
	}
}

// lastPart reads the file part and, at its end, checks that no other part follows: a key
// or ttl after the file would have been ignored and a second file has nowhere to go. The
// check fails the read, so the blob store keeps nothing.
type lastPart struct {
	part io.Reader
	mr   *multipart.Reader
}

func (l *lastPart) Read(p []byte) (int, error) {
	n, err := l.part.Read(p)
	if !errors.Is(err, io.EOF) {
		return n, err
	}
	next, nerr := l.mr.NextPart()
	switch {
	case errors.Is(nerr, io.EOF):
		return n, io.EOF
	case nerr == nil:
		return 0, errs.New(errInvalidRequest, map[string]any{"field": next.FormName()},
			"field %q comes after the file: send key, ttl and content_type before the file field, and one file per request", next.FormName())
	}
	return 0, errs.New(errInvalidRequest, nil, "the multipart body is malformed after the file: %v", nerr)
}

// putFile stores the raw request body under the key in the path.
func (s *Server) putFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	q := r.URL.Query()
	fields := map[string]string{"key": r.PathValue("key"), "ttl": q.Get("ttl")}
	name := q.Get("filename")
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = partType("", name)
	}
	f, err := s.stage(r, u, fields, name, ct, r.Body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toFileJSON(f))
	return nil
}

func (s *Server) stage(r *http.Request, u store.User, fields map[string]string, name, ct string, body io.Reader) (store.File, error) {
	ttl, err := parseTTL(fields["ttl"])
	if err != nil {
		return store.File{}, err
	}
	if _, _, err := mime.ParseMediaType(ct); err != nil {
		return store.File{}, errs.New(errInvalidRequest, map[string]any{"field": "content_type", "value": ct}, "content type %q is not a media type such as text/csv", ct)
	}
	f, err := s.files.Put(r.Context(), files.Upload{OwnerID: u.ID, Key: fields["key"], Name: name, ContentType: ct, TTL: ttl, Body: body})
	if err != nil {
		return store.File{}, s.bodyError(err)
	}
	s.metrics.BytesUploaded.Add(float64(f.Size))
	return f, nil
}

// parseTTL reads a staged file's ttl field: a positive duration (90m, 24h, 7d), or none
// ("") for a file kept until deleted.
func parseTTL(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := config.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errs.New(errInvalidRequest, map[string]any{"field": "ttl", "value": v},
			"ttl %q is not a positive duration such as 90m, 24h or 7d", v)
	}
	return d, nil
}

// bodyError names a request body that could not be read.
func (s *Server) bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errs.New(errTooLarge, map[string]any{"limit_bytes": mbe.Limit}, "request body is larger than %d bytes", mbe.Limit)
	}
	var e *errs.Error
	if errors.As(err, &e) || errors.Is(err, context.Canceled) {
		return err
	}
	if strings.Contains(err.Error(), "multipart") {
		return errs.New(errInvalidRequest, nil, "the multipart body is malformed: %v", err)
	}
	return err
}

// partType is the media type of an uploaded part: the one sent, or one guessed from the
// file name's extension, or application/octet-stream.
func partType(sent, name string) string {
	if sent != "" && sent != "application/octet-stream" {
		return sent
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		if t := mime.TypeByExtension(name[i:]); t != "" {
			return t
		}
	}
	return "application/octet-stream"
}

// getFile streams a file, with Range, If-None-Match and HEAD handled by http.ServeContent.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	f, err := s.files.Get(r.Context(), u, r.PathValue("key"))
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("X-Checksum", f.Checksum)
	h.Set("ETag", `"`+strings.TrimPrefix(f.Checksum, "sha256:")+`"`)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.OriginalName}))
	h.Set("X-Created-At", f.CreatedAt.Format(time.RFC3339Nano))
	if f.ExpiresAt != nil {
		h.Set("X-Expires-At", f.ExpiresAt.Format(time.RFC3339Nano))
	}
	h.Set("Cache-Control", "private, no-cache")
	content := &blobSeeker{ctx: r.Context(), open: func(off int64) (io.ReadCloser, error) { return s.files.Open(r.Context(), f, off, -1) }, size: f.Size}
	defer content.Close()
	cw := &countingWriter{ResponseWriter: w}
	http.ServeContent(cw, r, "", f.CreatedAt, content)
	s.metrics.BytesDownloaded.Add(float64(cw.n))
	if content.err != nil && cw.n == 0 {
		return content.err
	}
	return nil
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, u store.User) error {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return errs.New(errInvalidRequest, map[string]any{"field": "limit", "value": v}, "limit %q must be a whole number from 1 to 1000", v)
		}
		limit = n
	}
	after := ""
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil {
			return errs.New(errInvalidRequest, map[string]any{"field": "cursor"}, "cursor %q is not one this server gave out", c)
		}
		after = string(b)
	}
	list, more, err := s.files.List(r.Context(), u, q.Get("prefix"), after, limit)
	if err != nil {
		return err
	}
	out := make([]fileJSON, 0, len(list))
	for _, f := range list {
		out = append(out, toFileJSON(f))
	}
	var next *string
	if more {
		c := base64.RawURLEncoding.EncodeToString([]byte(list[len(list)-1].Key))
		next = &c
	}
	writeJSON(w, http.StatusOK, map[string]any{"files": out, "count": len(out), "next_cursor": next})
	return nil
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	if err := s.files.Delete(r.Context(), u, r.PathValue("key")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// blobSeeker is an io.ReadSeeker over a blob that opens a reader at the current offset
// on the first Read after a Seek, so http.ServeContent can serve ranges without the blob
// store having to seek.
type blobSeeker struct {
	ctx  context.Context
	open func(off int64) (io.ReadCloser, error)
	size int64
	off  int64
	rc   io.ReadCloser
	err  error
}

func (b *blobSeeker) Read(p []byte) (int, error) {
	if b.off >= b.size {
		return 0, io.EOF
	}
	if b.rc == nil {
		rc, err := b.open(b.off)
		if err != nil {
			b.err = err
			return 0, err
		}
		b.rc = rc
	}
	n, err := b.rc.Read(p)
	b.off += int64(n)
	return n, err
}

func (b *blobSeeker) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = b.off + offset
	case io.SeekEnd:
		abs = b.size + offset
	}
	if abs < 0 {
		return 0, fmt.Errorf("seek to %d before the start", abs)
	}
	if abs != b.off && b.rc != nil {
		b.rc.Close()
		b.rc = nil
	}
	b.off = abs
	return abs, nil
}

func (b *blobSeeker) Close() error {
	if b.rc != nil {
		return b.rc.Close()
	}
	return nil
}

type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// copyBody streams src to w; a client that hangs up just ends it.
func copyBody(w io.Writer, src io.Reader) {
	io.Copy(w, src)
}
