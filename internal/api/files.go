package api

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
	"github.com/skrip-dev/skrip/internal/wire"
)

// fileOf is staged file f as the API shows it: FileInfo of docs/spec.md §4.
func fileOf(f store.File) wire.FileInfo {
	return wire.FileInfo{FileKey: f.Key, Name: f.OriginalName, SizeBytes: f.Size, ContentType: f.ContentType,
		Checksum: f.Checksum, CreatedAt: f.CreatedAt, ExpiresAt: f.ExpiresAt, VersionID: f.VersionID}
}

// uploadFile takes a multipart body: optional key, ttl and content_type fields (or query
// parameters), then one file field whose bytes stream straight into the blob store. The
// body is read by the rules of the run route's uploads (package upload): a body that is
// malformed, cut short, or has anything after the file stores nothing. The file's fields
// are read by the staging area's intake (staging.Intake).
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	mr, err := upload.MultipartReader(r)
	if err != nil {
		return errs.New(upload.ErrInvalid, nil, "send multipart/form-data with a field named file (or PUT the raw bytes to /api/v1/files/{key})")
	}
	fields := map[string]string{}
	q := r.URL.Query()
	for _, k := range []string{"key", "ttl", "content_type"} {
		if v := q.Get(k); v != "" {
			fields[k] = v
		}
	}
	cond, err := writeCond(r)
	if err != nil {
		return err
	}
	var f store.File
	err = upload.StreamFile(r.Context(), mr, upload.StreamOptions{FileField: "file", TextFields: []string{"key", "ttl", "content_type"}},
		func(up upload.Stream) error {
			for k, v := range up.Fields {
				fields[k] = v
			}
			ct := fields["content_type"]
			if ct == "" && up.ContentType != "application/octet-stream" {
				// A browser sends application/octet-stream for a part whose type it does
				// not know: that declares nothing, and the type is guessed from the name.
				ct = up.ContentType
			}
			f, err = s.svc.Staging.Receive(r.Context(), staging.Intake{OwnerID: owner, Key: fields["key"], Name: up.FileName,
				ContentType: ct, TTL: fields["ttl"], Size: staging.NoSize, Cond: cond}, up.Body)
			return err
		})
	if err != nil {
		return err
	}
	w.Header().Set("ETag", staging.ETag(f))
	httpkit.WriteJSON(w, http.StatusCreated, fileOf(f))
	return nil
}

// putFile stores the raw request body under the key in the path, with the request's
// Content-Type (guessed from ?filename= when there is none).
func (s *Server) putFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	cond, err := writeCond(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f, err := s.svc.Staging.Receive(r.Context(), staging.Intake{OwnerID: owner, Key: r.PathValue("key"), Name: q.Get("filename"),
		ContentType: r.Header.Get("Content-Type"), TTL: q.Get("ttl"), Size: staging.NoSize, Cond: cond}, r.Body)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", staging.ETag(f))
	httpkit.WriteJSON(w, http.StatusCreated, fileOf(f))
	return nil
}

// writeCond is the condition a write's If-Match and If-None-Match headers put on the
// file it replaces or deletes (docs/api.md "Conditional writes").
func writeCond(r *http.Request) (staging.Cond, error) {
	return staging.ParseCond(strings.Join(r.Header.Values("If-Match"), ", "), strings.Join(r.Header.Values("If-None-Match"), ", "))
}

// fileOwner is the id of the user whose files the request addresses: the caller's, or for
// an admin the user named by ?owner= (docs/spec.md §4).
func (s *Server) fileOwner(r *http.Request, u store.User) (string, error) {
	return s.svc.Staging.Namespace(r.Context(), u, r.URL.Query().Get("owner"))
}

// getFile streams one version of a file, with Range, If-None-Match and HEAD handled by
// http.ServeContent. The file's bytes are opened and checked before any header goes out,
// so missing or unreadable bytes get a JSON error; a failure after that cuts the
// connection, so the client never takes a short body for the whole file.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	rd, err := s.openFile(r, owner)
	if err != nil {
		return err
	}
	defer rd.Close()
	f := rd.File
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("X-Checksum", f.Checksum)
	h.Set("ETag", staging.ETag(f))
	httpkit.Download(h, f.OriginalName)
	h.Set("X-Created-At", f.CreatedAt.Format(time.RFC3339Nano))
	if f.VersionID != "" {
		h.Set("X-Version-Id", f.VersionID)
	}
	if f.ExpiresAt != nil {
		h.Set("X-Expires-At", f.ExpiresAt.Format(time.RFC3339Nano))
	}
	h.Set("Cache-Control", "private, no-cache")
	asked := r.Header.Get("Range")
	if rng := usableRange(asked, f.Size); rng != "" {
		r.Header.Set("Range", rng)
	} else {
		r.Header.Del("Range")
	}
	fw := &fileWriter{ResponseWriter: w}
	http.ServeContent(fw, r, "", f.CreatedAt, rd)
	s.ops.Metrics.BytesDownloaded.Add(float64(fw.n))
	if fw.status == http.StatusPreconditionFailed {
		for _, k := range append([]string{"Content-Type", "X-Checksum", "X-Created-At", "X-Expires-At", "X-Version-Id", "Content-Length"}, httpkit.DownloadHeaders...) {
			h.Del(k)
		}
		return errs.New(httpkit.ErrPrecondition, map[string]any{"key": f.Key, "etag": h.Get("ETag")},
			"%s has changed: its ETag is now %s, not the one If-Match or If-Unmodified-Since names; read it again", f.Key, h.Get("ETag"))
	}
	if fw.status == http.StatusRequestedRangeNotSatisfiable {
		for _, k := range append([]string{"Content-Type", "X-Checksum", "ETag", "X-Created-At", "X-Expires-At", "X-Version-Id",
			"Last-Modified", "Accept-Ranges", "Content-Length"}, httpkit.DownloadHeaders...) {
			h.Del(k)
		}
		h.Set("Content-Range", fmt.Sprintf("bytes */%d", f.Size))
		return errs.New(httpkit.ErrRange, map[string]any{"key": f.Key, "range": asked, "size_bytes": f.Size},
			"the range %q selects none of the %d bytes of %s; ask for bytes=0-%d or a part of it", asked, f.Size, f.Key, max(f.Size-1, 0))
	}
	if rd.Failed() != nil {
		// The status has gone out (Reader logged and counted the failure): cutting the
		// connection is how the client learns the body is not whole.
		panic(http.ErrAbortHandler)
	}
	return nil
}

// usableRange returns the Range header to pass to http.ServeContent for a file of size
// bytes: h without the ranges that select nothing (a suffix of length 0, as in bytes=-0,
// or any suffix of an empty file), which ServeContent would answer with a 206 of nothing.
// When nothing is left, it returns a range that ServeContent refuses with 416 (after it
// has weighed If-Range). A range in another unit than bytes is ignored, as RFC 9110 asks;
// a byte range set that is not valid is left to ServeContent, which refuses it.
func usableRange(h string, size int64) string {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok {
		return ""
	}
	var kept []string
	for _, ra := range strings.Split(spec, ",") {
		ra = strings.TrimSpace(ra)
		if ra == "" {
			continue
		}
		start, end, ok := strings.Cut(ra, "-")
		if !ok {
			return h
		}
		if strings.TrimSpace(start) == "" {
			n, err := strconv.ParseInt(strings.TrimSpace(end), 10, 64)
			if err != nil || n < 0 {
				return h
			}
			if n == 0 || size == 0 {
				continue
			}
		}
		kept = append(kept, ra)
	}
	if len(kept) == 0 {
		return fmt.Sprintf("bytes=%d-", size)
	}
	return "bytes=" + strings.Join(kept, ",")
}

// fileWriter passes http.ServeContent's answer on, except a 416 or a 412, which it holds
// back for the handler to answer with the JSON error of docs/spec.md §3. It counts the body bytes
// sent.
type fileWriter struct {
	http.ResponseWriter
	status int // the status ServeContent chose; 0 until it chose
	n      int64
}

func (w *fileWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	if !w.held() {
		w.ResponseWriter.WriteHeader(code)
	}
}

// held reports whether the status ServeContent chose is one the handler answers itself.
func (w *fileWriter) held() bool {
	return w.status == http.StatusRequestedRangeNotSatisfiable || w.status == http.StatusPreconditionFailed
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.held() {
		return len(p), nil
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// downloadBufBytes is the buffer a file's bytes go out through. Measured over loopback
// (a 64 MiB GET, CPU of server and client): io.Copy's 32 KiB took 32-34 ms, 64 KiB 29-31,
// 256 KiB 26-29 but the client's download (read, hash, write to disk) then ran slower in
// wall time, and handing an fsblob file to sendfile(2) took 36-44 ms.
const downloadBufBytes = 64 << 10

// ReadFrom is how http.ServeContent's copy of the body reaches the connection, through a
// larger buffer than its own.
func (w *fileWriter) ReadFrom(src io.Reader) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{src}, make([]byte, downloadBufBytes))
}

func (w *fileWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, u store.User) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "limit", "value": v}, "limit %q must be a whole number from 1 to 1000", v)
		}
		limit = n
	}
	list, next, err := s.svc.Staging.List(r.Context(), owner, q.Get("prefix"), q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	out := wire.FileList{Files: make([]wire.FileInfo, 0, len(list))}
	for _, f := range list {
		out.Files = append(out.Files, fileOf(f))
	}
	out.Count = len(out.Files)
	if next != "" {
		out.NextCursor = &next
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	cond, err := writeCond(r)
	if err != nil {
		return err
	}
	if err := s.svc.Staging.DeleteIf(r.Context(), owner, r.PathValue("key"), cond); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// countingWriter counts the bytes written through it.
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
