package client

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/hashcopy"
	"github.com/skrip-dev/skrip/internal/wire"
)

// FileInfo describes a staged file (docs/spec.md §4).
type FileInfo = wire.FileInfo

// UploadOptions are the optional parts of an upload.
type UploadOptions struct {
	Key         string // "" lets the server choose files/f_<ULID>
	TTL         string // e.g. "90m" or "7d"; "" keeps the file until deleted
	ContentType string
	// IfMatch and IfNoneMatch are the upload's conditions (docs/api.md "Conditional
	// writes"), as header values: a quoted ETag, a list of them, or "*".
	IfMatch     string
	IfNoneMatch string
}

// header is the conditions' headers added to h.
func (o UploadOptions) header(h http.Header) http.Header {
	if o.IfMatch != "" {
		h.Set("If-Match", o.IfMatch)
	}
	if o.IfNoneMatch != "" {
		h.Set("If-None-Match", o.IfNoneMatch)
	}
	return h
}

// WithFileOwner returns a client whose files requests (Upload, Put, Files, FileInfoOf,
// Download, DeleteFile) address the files of owner, a user id or name, instead of the
// caller's own: keys are a per-owner namespace, and only an admin may name another user.
func (c *Client) WithFileOwner(owner string) *Client {
	cc := *c
	cc.fileOwner = owner
	return &cc
}

// ownerQuery is the ?owner= suffix of a files route, or "".
func (c *Client) ownerQuery(sep string) string {
	if c.fileOwner == "" {
		return ""
	}
	return sep + "owner=" + url.QueryEscape(c.fileOwner)
}

// filePath is FilePath with the client's owner.
func (c *Client) filePath(key string) string {
	return FilePath(key) + c.ownerQuery("?")
}

// Upload streams body as a multipart upload named name. The body is never held whole in
// memory.
func (c *Client) Upload(ctx context.Context, name string, body io.Reader, opts UploadOptions) (FileInfo, error) {
	path := "/api/v1/files" + c.ownerQuery("?")
	var resp *http.Response
	var err error
	if size, ok := sizeOf(body); ok {
		// The framing is small and the body's size known: the request goes out with a
		// Content-Length, in large writes, rather than chunked through a pipe.
		var head, tail bytes.Buffer
		mw := multipart.NewWriter(&head)
		if err := writeUploadHead(mw, name, opts); err != nil {
			return FileInfo{}, err
		}
		ct := mw.FormDataContentType()
		tail.WriteString("\r\n--" + mw.Boundary() + "--\r\n")
		r := io.MultiReader(&head, io.LimitReader(body, size), &tail)
		resp, err = c.RequestSized(ctx, http.MethodPost, path, r, int64(head.Len())+size+int64(tail.Len()), opts.header(http.Header{"Content-Type": {ct}}))
	} else {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			err := writeUploadHead(mw, name, opts)
			if err == nil {
				if _, err = io.Copy(pw, body); err == nil {
					err = mw.Close()
				}
			}
			pw.CloseWithError(err)
		}()
		resp, err = c.Request(ctx, http.MethodPost, path, pr, opts.header(http.Header{"Content-Type": {mw.FormDataContentType()}}))
		pr.CloseWithError(io.ErrClosedPipe) // unblocks the writer when the server answered early
	}
	if err != nil {
		return FileInfo{}, err
	}
	defer resp.Body.Close()
	var fi FileInfo
	return fi, decode(resp, &fi)
}

// writeUploadHead writes an upload's form fields and the file part's header.
func writeUploadHead(mw *multipart.Writer, name string, opts UploadOptions) error {
	for _, f := range [][2]string{{"key", opts.Key}, {"ttl", opts.TTL}, {"content_type", opts.ContentType}} {
		if f[1] != "" {
			if err := mw.WriteField(f[0], f[1]); err != nil {
				return err
			}
		}
	}
	_, err := mw.CreateFormFile("file", name)
	return err
}

// sizeOf is the number of bytes left in body when it can tell: a regular file's rest
// from its offset, or a reader that knows its length (bytes.Reader, strings.Reader).
func sizeOf(body io.Reader) (int64, bool) {
	switch b := body.(type) {
	case *os.File:
		st, err := b.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return 0, false
		}
		off, err := b.Seek(0, io.SeekCurrent)
		if err != nil || off > st.Size() {
			return 0, false
		}
		return st.Size() - off, true
	case interface{ Len() int }:
		return int64(b.Len()), true
	}
	return 0, false
}

// Put stores size bytes from body under key with a raw PUT (no multipart framing).
func (c *Client) Put(ctx context.Context, key string, body io.Reader, size int64, contentType string) error {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	req := io.LimitReader(body, size)
	resp, err := c.RequestSized(ctx, http.MethodPut, c.filePath(key), req, size, h)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Files lists the caller's files (or WithFileOwner's) under prefix, one page at a time.
func (c *Client) Files(ctx context.Context, prefix, cursor string, limit int) ([]FileInfo, string, error) {
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if c.fileOwner != "" {
		q.Set("owner", c.fileOwner)
	}
	var out wire.FileList
	if err := c.Do(ctx, http.MethodGet, "/api/v1/files?"+q.Encode(), nil, &out); err != nil {
		return nil, "", err
	}
	next := ""
	if out.NextCursor != nil {
		next = *out.NextCursor
	}
	return out.Files, next, nil
}

// FilePath is the API path of a file key (a bare f_<ULID> works too).
func FilePath(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/api/v1/files/" + strings.Join(segs, "/")
}

// FileInfoOf asks for a file's metadata with HEAD.
func (c *Client) FileInfoOf(ctx context.Context, key string) (FileInfo, error) {
	resp, err := c.Request(ctx, http.MethodHead, c.filePath(key), nil, nil)
	var apiErr *Error
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		apiErr.Code, apiErr.Message = "not_found", "file not found: "+key
	}
	if err != nil {
		return FileInfo{}, err
	}
	resp.Body.Close()
	return infoFromHeaders(key, resp), nil
}

func infoFromHeaders(key string, resp *http.Response) FileInfo {
	fi := FileInfo{FileKey: key, SizeBytes: resp.ContentLength, ContentType: resp.Header.Get("Content-Type"), Checksum: resp.Header.Get("X-Checksum")}
	if !strings.Contains(key, "/") {
		fi.FileKey = "files/" + key
	}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		fi.Name = params["filename"]
	}
	if t, err := time.Parse(time.RFC3339Nano, resp.Header.Get("X-Created-At")); err == nil {
		fi.CreatedAt = t
	}
	if t, err := time.Parse(time.RFC3339Nano, resp.Header.Get("X-Expires-At")); err == nil {
		fi.ExpiresAt = &t
	}
	fi.VersionID = resp.Header.Get("X-Version-Id")
	return fi
}

// ErrChecksum means downloaded bytes do not match the checksum the server announced.
type ErrChecksum struct {
	Key, Want, Got string
}

func (e *ErrChecksum) Error() string {
	return fmt.Sprintf("checksum mismatch for %s: the server said %s, the bytes received are %s", e.Key, e.Want, e.Got)
}

// Download streams a file into w and verifies its checksum. It calls start with the file's
// metadata before the first byte is written (for naming the output or sizing a progress
// bar). A mismatch returns *ErrChecksum after every byte was written.
func (c *Client) Download(ctx context.Context, key string, start func(FileInfo) (io.Writer, error)) (FileInfo, error) {
	return c.DownloadVersion(ctx, key, "", start)
}

// DownloadVersion is Download of the file's version id (from FileVersions); "" is the
// current one.
func (c *Client) DownloadVersion(ctx context.Context, key, id string, start func(FileInfo) (io.Writer, error)) (FileInfo, error) {
	path := c.filePath(key)
	if id != "" {
		path = FilePath(key) + "?version=" + url.QueryEscape(id) + c.ownerQuery("&")
	}
	resp, err := c.Request(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return FileInfo{}, err
	}
	defer resp.Body.Close()
	fi := infoFromHeaders(key, resp)
	w, err := start(fi)
	if err != nil {
		return fi, err
	}
	n, digest, err := hashcopy.Copy(ctx, w, resp.Body)
	if err != nil {
		return fi, fmt.Errorf("downloading %s: %w", fi.FileKey, err)
	}
	if fi.SizeBytes >= 0 && n != fi.SizeBytes {
		return fi, fmt.Errorf("downloading %s: got %d bytes, the server announced %d", fi.FileKey, n, fi.SizeBytes)
	}
	got := "sha256:" + hex.EncodeToString(digest)
	if fi.Checksum == "" {
		return fi, fmt.Errorf("downloading %s: the server sent no X-Checksum to verify", fi.FileKey)
	}
	if got != fi.Checksum {
		return fi, &ErrChecksum{Key: fi.FileKey, Want: fi.Checksum, Got: got}
	}
	return fi, nil
}

// copyVerify copies src to w and returns the byte count and "sha256:<hex>".
func copyVerify(ctx context.Context, w io.Writer, src io.Reader) (int64, string, error) {
	n, digest, err := hashcopy.Copy(ctx, w, src)
	return n, "sha256:" + hex.EncodeToString(digest), err
}

// DeleteFile removes a file.
func (c *Client) DeleteFile(ctx context.Context, key string) error {
	return c.DeleteFileIf(ctx, key, "")
}

// DeleteFileIf deletes the file under key only when it has an ETag ifMatch names (a
// quoted ETag, a list, or "*"; "" deletes whatever is there): otherwise the server
// answers 412 precondition_failed and the file stays.
func (c *Client) DeleteFileIf(ctx context.Context, key, ifMatch string) error {
	h := http.Header{"Accept": {"application/json"}}
	if ifMatch != "" {
		h.Set("If-Match", ifMatch)
	}
	resp, err := c.Request(ctx, http.MethodDelete, c.filePath(key), nil, h)
	if err != nil {
		return err
	}
	return decode(resp, nil)
}

// CleanupReport is what one janitor pass removed.
type CleanupReport = wire.CleanupReport

// Cleanup asks the server to run one janitor pass now (admin only).
func (c *Client) Cleanup(ctx context.Context) (CleanupReport, error) {
	var out wire.Cleanup
	return out.Removed, c.Do(ctx, http.MethodPost, "/api/v1/admin/cleanup", nil, &out)
}
