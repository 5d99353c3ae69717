package client

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/wire"
)

// The resumable upload route speaks tus 1.0.0 (https://tus.io/protocols/resumable-upload),
// served by tusd's handler (docs/api.md). The client side is written here by hand: it
// needs four requests of the core protocol and creation, and the Go tus clients either
// read each chunk into memory or keep their own resume store, where skrip streams the
// rest of a file in one request and the CLI keeps its own state file.

// tusVersion is the protocol version every tus request names.
const tusVersion = "1.0.0"

// uploadsPath is the collection new resumable uploads are created in.
const uploadsPath = "/api/v1/uploads/"

// ResumableOptions are the parts of a resumable upload besides its bytes.
type ResumableOptions struct {
	UploadOptions
	// Name is the original file name the server records.
	Name string
	// URL is an upload begun earlier (from Created), to go on with; "" creates one. An
	// upload the server no longer has, or of another size, is replaced by a new one.
	URL string
	// Created, when set, is called with a new upload's URL and expiry before any of its
	// bytes are sent, so the caller can keep it for a later run.
	Created func(url string, expires time.Time) error
	// Resuming, when set, is called when the upload of URL goes on from offset > 0.
	Resuming func(offset int64)
	// Progress, when set, wraps the bytes of each request, which start at offset (for a
	// progress bar).
	Progress func(offset int64, body io.Reader) io.Reader
	// Retries is how many times a dropped connection or a failed server is tried again
	// within this call before giving up with *InterruptedError; 0 means 4, -1 none.
	Retries int
	// Backoff is the first pause before trying again; it doubles each time. 0 means 250ms.
	Backoff time.Duration
}

// InterruptedError is a resumable upload that stopped before its end: its bytes up to
// Offset are on the server, and UploadResumable with the same URL goes on from there
// until the upload expires.
type InterruptedError struct {
	URL          string
	Offset, Size int64
	Err          error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("the upload stopped after %d of %d bytes: %v", e.Offset, e.Size, e.Err)
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// ErrResumableUnsupported means the server has no resumable upload route (an older
// server): the caller may fall back to Upload.
var ErrResumableUnsupported = errors.New("the server does not offer resumable uploads")

// UploadStatus is the answer of GET /api/v1/uploads/<id>: File is set once the upload
// is complete.
type UploadStatus = wire.Upload

// UploadResumable uploads size bytes of f over the tus protocol: it creates an upload
// (or goes on with opts.URL), sends what the server does not have yet in one streamed
// request, and after a dropped connection asks the server for its offset and goes on
// from there, a few times, before it gives up with *InterruptedError. It answers with
// the staged file, as Upload does. f is read where it is needed and never held whole.
func (c *Client) UploadResumable(ctx context.Context, f io.ReaderAt, size int64, opts ResumableOptions) (FileInfo, error) {
	if c.fileOwner != "" {
		return FileInfo{}, errors.New("resumable uploads go to the caller's own files; upload for another owner with Upload")
	}
	r := &resumable{c: c, f: f, size: size, opts: opts, url: opts.URL}
	return r.run(ctx)
}

// resumable is one call of UploadResumable.
type resumable struct {
	c      *Client
	f      io.ReaderAt
	size   int64
	opts   ResumableOptions
	url    string // the upload's URL; "" until created
	offset int64  // the server's offset, as last heard
	tries  int    // failed attempts so far
}

func (r *resumable) run(ctx context.Context) (FileInfo, error) {
	if err := r.start(ctx); err != nil {
		return FileInfo{}, err
	}
	for r.offset < r.size {
		from := r.offset
		err := r.patch(ctx)
		// The server kept what it received before a drop: ask where to go on from.
		for err != nil {
			if isGone(err) {
				return FileInfo{}, fmt.Errorf("the upload is gone from the server (expired or deleted) after %d of %d bytes were sent; start it again", r.offset, r.size)
			}
			if isStatus(err, http.StatusConflict) {
				err = fmt.Errorf("%w: %w", errMoved, err)
			}
			if err = r.retry(ctx, err); err != nil {
				return FileInfo{}, err
			}
			err = r.settle(ctx)
		}
		if r.offset > from {
			r.tries = 0 // bytes got through: the next drop gets a few tries of its own
		}
	}
	for {
		st, err := r.c.UploadStatusOf(ctx, r.url)
		if err == nil && st.File != nil {
			return *st.File, nil
		}
		if err == nil {
			// The request that sent the last bytes dropped while the server was
			// still making the file of them.
			err = errNotFinished
		}
		if err = r.retry(ctx, err); err != nil {
			return FileInfo{}, err
		}
	}
}

// start finds the upload to go on with, or creates one, and learns the server's offset.
func (r *resumable) start(ctx context.Context) error {
	if r.url != "" {
		for {
			err := r.settle(ctx)
			if err == nil {
				if r.offset > 0 && r.opts.Resuming != nil {
					r.opts.Resuming(r.offset)
				}
				return nil
			}
			if isGone(err) || errors.Is(err, errOtherSize) {
				break // expired, deleted, or of another file: start over
			}
			if err := r.retry(ctx, err); err != nil {
				return err
			}
		}
	}
	for {
		err := r.create(ctx)
		if err == nil {
			return nil
		}
		if err := r.retry(ctx, err); err != nil {
			return err
		}
	}
}

// retry decides about a failed step: it sleeps and answers nil when the step may be tried
// again, or answers the error to give up with.
func (r *resumable) retry(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return r.interrupted(ctx.Err())
	}
	if !retryable(err) {
		return err
	}
	retries, backoff := r.opts.Retries, r.opts.Backoff
	if retries == 0 {
		retries = 4
	}
	if backoff <= 0 {
		backoff = 250 * time.Millisecond
	}
	if r.tries >= retries {
		return r.interrupted(err)
	}
	t := time.NewTimer(backoff << r.tries)
	defer t.Stop()
	r.tries++
	select {
	case <-ctx.Done():
		return r.interrupted(ctx.Err())
	case <-t.C:
		return nil
	}
}

// interrupted is the error of giving up because of err: an *InterruptedError once the
// upload exists on the server, since it can then be resumed.
func (r *resumable) interrupted(err error) error {
	if r.url == "" {
		return err
	}
	return &InterruptedError{URL: r.url, Offset: r.offset, Size: r.size, Err: err}
}

// retryable reports whether a step that failed with err may succeed when tried again: the
// connection dropped, the server failed or was busy, or the upload was still locked by a
// request whose connection had just dropped.
func retryable(err error) bool {
	var ue *UnreachableError
	var ae *Error
	switch {
	case errors.As(err, &ue), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errNotFinished), errors.Is(err, errMoved):
		return true
	case errors.As(err, &ae):
		return (ae.Status >= 500 && ae.Status != http.StatusInsufficientStorage) ||
			ae.Status == http.StatusLocked || ae.Status == http.StatusTooManyRequests
	}
	return false
}

// isGone reports whether err says the upload is not on the server (any more).
func isGone(err error) bool {
	return isStatus(err, http.StatusNotFound) || isStatus(err, http.StatusGone)
}

// isStatus reports whether err is an error answer with this HTTP status.
func isStatus(err error, status int) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Status == status
}

// errMoved is a PATCH refused because the upload does not stand where it was sent from:
// another request, such as one whose connection just dropped, stored bytes meanwhile.
var errMoved = errors.New("the upload's offset moved")

// errNotFinished is a complete upload whose file the server has not made yet.
var errNotFinished = errors.New("the server has every byte of the upload but has not made its file yet")

// errOtherSize is an earlier upload that does not have the size of this one.
var errOtherSize = errors.New("the earlier upload has another size")

// create makes a new upload and remembers its URL and offset (0).
func (r *resumable) create(ctx context.Context) error {
	h := tusHeader()
	h.Set("Upload-Length", strconv.FormatInt(r.size, 10))
	h.Set("Upload-Metadata", encodeMetadata("filename", r.opts.Name, "key", r.opts.Key, "ttl", r.opts.TTL, "content_type", r.opts.ContentType))
	resp, err := r.c.RequestSized(ctx, http.MethodPost, uploadsPath, nil, 0, h)
	var ae *Error
	if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusMethodNotAllowed) {
		return ErrResumableUnsupported
	}
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	loc, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" || uploadID(loc.String()) == "" {
		return fmt.Errorf("the server created an upload without a usable Location (%q)", resp.Header.Get("Location"))
	}
	r.url, r.offset = loc.String(), 0
	if n, err := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64); err == nil {
		r.offset = n // creation-with-upload servers may already count bytes
	}
	if r.opts.Created != nil {
		expires, _ := http.ParseTime(resp.Header.Get("Upload-Expires"))
		if err := r.opts.Created(r.url, expires); err != nil {
			return fmt.Errorf("keeping the upload's state: %w", err)
		}
	}
	return nil
}

// head asks the server for the upload's offset.
func (r *resumable) head(ctx context.Context) error {
	off, length, err := r.c.UploadOffset(ctx, r.url)
	if err != nil {
		return err
	}
	if length != r.size {
		return errOtherSize
	}
	r.offset = off
	return nil
}

// settle asks for the upload's offset until two answers a moment apart agree. A request
// whose connection just dropped may still be storing what reached the server; bytes sent
// from the offset before it ends would all go, and be refused at their end.
func (r *resumable) settle(ctx context.Context) error {
	if err := r.head(ctx); err != nil || r.offset == r.size {
		return err
	}
	for range 10 {
		before := r.offset
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(settleWait):
		}
		if err := r.head(ctx); err != nil || r.offset == before {
			return err
		}
	}
	return nil
}

// settleWait is the moment between two answers settle compares.
const settleWait = 500 * time.Millisecond

// patch sends everything from the server's offset to the end in one request, streamed
// from f, and takes the offset the server answers.
func (r *resumable) patch(ctx context.Context) error {
	n := r.size - r.offset
	var body io.Reader = io.NewSectionReader(r.f, r.offset, n)
	if r.opts.Progress != nil {
		body = r.opts.Progress(r.offset, body)
	}
	h := tusHeader()
	h.Set("Upload-Offset", strconv.FormatInt(r.offset, 10))
	h.Set("Content-Type", "application/offset+octet-stream")
	resp, err := r.c.RequestSized(ctx, http.MethodPatch, r.c.uploadPath(r.url), body, n, h)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	off, err := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	if err != nil || off < r.offset || off > r.size {
		return fmt.Errorf("the server answered an upload request with offset %q", resp.Header.Get("Upload-Offset"))
	}
	r.offset = off
	return nil
}

// UploadOffset asks the server (HEAD) how many bytes of the upload at uploadURL it has, and
// the upload's length. An upload the server does not have (unknown, expired, deleted,
// another user's) is an *Error with status 404.
func (c *Client) UploadOffset(ctx context.Context, uploadURL string) (offset, length int64, err error) {
	resp, err := c.Request(ctx, http.MethodHead, c.uploadPath(uploadURL), nil, tusHeader())
	if err != nil {
		return 0, 0, err
	}
	resp.Body.Close()
	offset, err1 := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	length, err2 := strconv.ParseInt(resp.Header.Get("Upload-Length"), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("the server's answer about upload %s has no offset or length", uploadID(uploadURL))
	}
	return offset, length, nil
}

// UploadStatusOf reads an upload's state, with its file once it is complete.
func (c *Client) UploadStatusOf(ctx context.Context, uploadURL string) (UploadStatus, error) {
	var st UploadStatus
	return st, c.Do(ctx, http.MethodGet, c.uploadPath(uploadURL), nil, &st)
}

// TerminateUpload deletes an unfinished upload and the bytes the server has of it.
func (c *Client) TerminateUpload(ctx context.Context, uploadURL string) error {
	resp, err := c.Request(ctx, http.MethodDelete, c.uploadPath(uploadURL), nil, tusHeader())
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// uploadPath is the API path of the upload at uploadURL on this client's server. Only
// the upload's id is taken from the URL: the server builds Location from the Host it was
// asked at, which behind a proxy need not be the address this client was given.
func (c *Client) uploadPath(uploadURL string) string {
	return uploadsPath + url.PathEscape(uploadID(uploadURL))
}

// uploadID is the last path segment of an upload's URL, or "" when it has none.
func uploadID(uploadURL string) string {
	u, err := url.Parse(uploadURL)
	if err != nil {
		return ""
	}
	id := path.Base(u.Path)
	if id == "/" || id == "." || id == "uploads" {
		return ""
	}
	return id
}

// tusHeader is the header every tus request carries.
func tusHeader() http.Header {
	return http.Header{"Tus-Resumable": {tusVersion}}
}

// encodeMetadata writes Upload-Metadata: "key base64(value)" pairs (a key, a value, ...),
// comma-separated, leaving out empty values.
func encodeMetadata(kv ...string) string {
	var pairs []string
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			pairs = append(pairs, kv[i]+" "+base64.StdEncoding.EncodeToString([]byte(kv[i+1])))
		}
	}
	return strings.Join(pairs, ",")
}
