// Package resumable serves resumable uploads on the tus 1.0 protocol (docs/api.md
// "Resumable uploads") at /api/v1/uploads/: tusd's handler speaks the protocol, over a
// data store that hands every request to the staging service, which keeps the partial
// bytes in skrip's blob store and the state in SQL. Any API node can take any request of
// an upload, on either blob backend. Errors answer with the API's JSON envelope.
package resumable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"
	expslog "golang.org/x/exp/slog"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// BasePath is where the protocol is served.
const BasePath = "/api/v1/uploads/"

// Extensions are the protocol's extensions served: tusd announces the first three,
// expiration is this package's (the Upload-Expires header).
const Extensions = "creation,creation-with-upload,termination,expiration"

// Handler serves the protocol for users that the caller has authenticated: it expects
// the user on the request's context (httpkit.WithUser).
type Handler struct {
	files *staging.Service
	tus   *tusd.Handler
	locks *locker
	log   *slog.Logger

	mu          sync.Mutex
	interrupted bool
	running     map[*http.Request]context.CancelCauseFunc // the requests under way
}

// New returns the protocol's handler over files.
func New(files *staging.Service, log *slog.Logger) (*Handler, error) {
	h := &Handler{files: files, log: log, running: map[*http.Request]context.CancelCauseFunc{}}
	composer := tusd.NewStoreComposer()
	composer.UseCore(dataStore{h})
	composer.UseTerminater(dataStore{h})
	h.locks = newLocker(files)
	composer.UseLocker(h.locks)
	tus, err := tusd.NewHandler(tusd.Config{
		StoreComposer: composer,
		BasePath:      BasePath,
		// No MaxSize: tusd would refuse a length over it in words of its own, before
		// staging names the file and the limit. The limit is announced by the
		// responseWriter (Tus-Max-Size) and enforced by staging at creation.
		DisableDownload: true,
		// skrip's own CORS (httpkit.CORS, SKRIP_CORS_ORIGINS) answers pages of other origins.
		Cors: &tusd.CorsConfig{Disable: true},
		// tusd logs every request; skrip's request log has them already, and the errors
		// that matter reach it through tusError.
		Logger:                  expslog.New(expslog.NewTextHandler(io.Discard, nil)),
		RespectForwardedHeaders: false,
		PreFinishResponseCallback: func(ev tusd.HookEvent) (tusd.HTTPResponse, error) {
			st := stateOf(ev.Context)
			if st == nil || st.file == nil {
				return tusd.HTTPResponse{}, nil
			}
			return tusd.HTTPResponse{Header: tusd.HTTPHeader{"X-File-Key": st.file.Key, "X-Checksum": st.file.Checksum}}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	h.tus = tus
	return h, nil
}

// ServeHTTP serves one request of the protocol under BasePath.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := &state{r: r}
	if r.Body != nil {
		st.body = &countedBody{ReadCloser: r.Body}
		r.Body = st.body
	}
	ctx, cancel := context.WithCancelCause(context.WithValue(r.Context(), stateKey{}, st))
	defer cancel(nil)
	r = r.WithContext(ctx)
	h.mu.Lock()
	if h.interrupted {
		cancel(tusd.ErrServerShutdown)
	}
	h.running[r] = cancel
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.running, r)
		h.mu.Unlock()
	}()
	rw := &responseWriter{ResponseWriter: w, st: st, log: h.log, maxSize: h.files.Limits().MaxFileBytes}
	http.StripPrefix(strings.TrimSuffix(BasePath, "/"), h.tus).ServeHTTP(rw, r)
	rw.flushError()
	if st.created != nil && rw.status >= 400 {
		h.dropCreated(r.Context(), *st.created)
	}
}

// dropCreated deletes an upload whose creation answered with an error: tusd leaves the
// Location out of that answer (and a client whose connection dropped got none), so
// nobody can resume it, and it would hold its bytes and reserve its length until it
// expired.
func (h *Handler) dropCreated(ctx context.Context, u store.Upload) {
	err := h.files.TerminateUpload(context.WithoutCancel(ctx), u.OwnerID, u.ID)
	if err != nil && !errors.Is(err, staging.ErrUploadNotFound) {
		h.log.Warn("could not delete an upload whose creation failed; it expires", "upload", u.ID, "error", err)
	}
}

// Interrupt stops the requests under way, and any that comes after, as tusd does when
// its server shuts down: a PATCH stops reading, keeps the bytes it got, and answers 503,
// so its client resumes from there on this server or another.
func (h *Handler) Interrupt() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.interrupted = true
	for _, cancel := range h.running {
		cancel(tusd.ErrServerShutdown)
	}
}

// state is what one request's store calls tell the response: the upload's expiry, and
// the file its last bytes made.
type state struct {
	r       *http.Request
	body    *countedBody // r's body as the client sent it
	expires time.Time
	file    *store.File
	created *store.Upload // the upload r created
}

// countedBody counts the bytes read from a request's body.
type countedBody struct {
	io.ReadCloser
	n atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// pastEnd reads a request's bytes as tusd hands them to WriteChunk. tusd stops at the
// upload's length, and when a body without a Content-Length (chunked) goes on past it,
// it finds out by reading a byte more from the body, but only tells the client after
// the upload is stored and finished. pastEnd then gives that byte, so that
// WriteUpload refuses the request's bytes instead of making a file of their start.
type pastEnd struct {
	r     io.Reader
	body  *countedBody
	given int64
	told  bool
}

func (p *pastEnd) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.given += int64(n)
	if err == io.EOF && !p.told && p.body != nil && p.body.n.Load() > p.given && len(b) > n {
		p.told = true
		b[n] = 0
		return n + 1, io.EOF
	}
	return n, err
}

type stateKey struct{}

func stateOf(ctx context.Context) *state {
	st, _ := ctx.Value(stateKey{}).(*state)
	return st
}

// owner is the id of the user a request under ctx is made by.
func owner(ctx context.Context) (string, error) {
	u, ok := httpkit.UserFrom(ctx)
	if !ok {
		return "", httpkit.ErrUnauthorized // the error table's row says what to send
	}
	return u.ID, nil
}

// dataStore is tusd's data store: every call goes to the staging service as the request's user.
type dataStore struct{ h *Handler }

func (d dataStore) NewUpload(ctx context.Context, info tusd.FileInfo) (tusd.Upload, error) {
	ownerID, err := owner(ctx)
	if err != nil {
		return nil, d.h.tusError(ctx, err)
	}
	in, err := intake(ownerID, info)
	if err != nil {
		return nil, d.h.tusError(ctx, err)
	}
	if err := unconditional(ctx); err != nil {
		return nil, d.h.tusError(ctx, err)
	}
	u, err := d.h.files.BeginUpload(ctx, in)
	if err != nil {
		return nil, d.h.tusError(ctx, err)
	}
	if st := stateOf(ctx); st != nil {
		st.created = &u
	}
	return d.h.upload(ctx, u), nil
}

// unconditional refuses a creation that carries If-Match or If-None-Match. A resumable
// upload makes its file when its last bytes come, maybe a day later and on another
// node, so a condition would be checked against a file the client no longer has in
// mind, and a refusal would come after every byte was sent: a conditional write is a
// PUT of the whole file to /api/v1/files/{key} (docs/api.md "Conditional writes").
// Refused, not ignored, so that no client takes the upload for a conditional one.
func unconditional(ctx context.Context) error {
	st := stateOf(ctx)
	if st == nil {
		return nil
	}
	for _, h := range []string{"If-Match", "If-None-Match"} {
		if st.r.Header.Get(h) != "" {
			return errs.New(staging.ErrInvalid, map[string]any{"field": h},
				"a resumable upload takes no %s: PUT the file to /api/v1/files/{key} with %s for a conditional write", h, h)
		}
	}
	return nil
}

func (d dataStore) GetUpload(ctx context.Context, id string) (tusd.Upload, error) {
	ownerID, err := owner(ctx)
	if err != nil {
		return nil, d.h.tusError(ctx, err)
	}
	u, err := d.h.files.Upload(ctx, ownerID, id)
	if err != nil {
		return nil, d.h.tusError(ctx, err)
	}
	return d.h.upload(ctx, u), nil
}

func (d dataStore) AsTerminatableUpload(up tusd.Upload) tusd.TerminatableUpload {
	return up.(*upload)
}

// intake reads a creation request's metadata: key, filename (or name), content_type (or
// filetype or type, as Uppy and tus-js-client send it) and ttl, which the staging area's
// intake checks as it does every file's.
func intake(ownerID string, info tusd.FileInfo) (staging.Intake, error) {
	if info.SizeIsDeferred || info.IsPartial || info.IsFinal {
		return staging.Intake{}, errs.New(httpkit.ErrInvalidRequest, nil, "send Upload-Length: uploads of a length not yet known, and concatenation, are not supported")
	}
	md := info.MetaData
	return staging.Intake{OwnerID: ownerID, Key: md["key"], Name: first(md["filename"], md["name"]), Size: info.Size,
		ContentType: first(md["content_type"], md["filetype"], md["type"]), TTL: md["ttl"]}, nil
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// upload is one upload as tusd sees it, for the request that looked it up.
type upload struct {
	h    *Handler
	u    store.Upload
	held bool // this request stored the last bytes and holds the upload to finish it
}

func (h *Handler) upload(ctx context.Context, u store.Upload) *upload {
	if st := stateOf(ctx); st != nil {
		st.expires = u.ExpiresAt
	}
	return &upload{h: h, u: u}
}

func (up *upload) GetInfo(ctx context.Context) (tusd.FileInfo, error) {
	md := tusd.MetaData{"key": up.u.Key, "filename": up.u.Name, "content_type": up.u.ContentType}
	if up.u.TTL > 0 {
		md["ttl"] = staging.FormatTTL(up.u.TTL)
	}
	return tusd.FileInfo{ID: up.u.ID, Size: up.u.Size, Offset: up.u.Received, MetaData: md}, nil
}

func (up *upload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	up.h.locks.writing(up.u.ID)
	var body *countedBody
	if st := stateOf(ctx); st != nil {
		body = st.body
	}
	n, last, err := up.h.files.WriteUpload(ctx, up.u.OwnerID, up.u.ID, offset, &pastEnd{r: src, body: body})
	if err != nil {
		return 0, up.h.tusError(ctx, err)
	}
	up.u.Received += n
	up.held = last
	if st := stateOf(ctx); st != nil {
		st.expires = time.Now().Add(up.h.files.UploadTTL())
	}
	return n, nil
}

func (up *upload) GetReader(ctx context.Context) (io.ReadCloser, error) {
	return nil, tusd.ErrNotImplemented
}

func (up *upload) FinishUpload(ctx context.Context) error {
	f, err := up.h.files.FinishUpload(ctx, up.u.OwnerID, up.u.ID, up.held)
	up.held = false
	if err != nil {
		return up.h.tusError(ctx, err)
	}
	if st := stateOf(ctx); st != nil {
		st.file = &f
	}
	return nil
}

func (up *upload) Terminate(ctx context.Context) error {
	if err := up.h.files.TerminateUpload(ctx, up.u.OwnerID, up.u.ID); err != nil {
		return up.h.tusError(ctx, err)
	}
	return nil
}

// tusError is err as tusd answers it: the API's status and JSON body (a 500's text goes
// to the log, the client gets a request id).
func (h *Handler) tusError(ctx context.Context, err error) error {
	st := stateOf(ctx)
	if st == nil {
		return err
	}
	status, body := httpkit.ErrorOf(st.r, h.log, err)
	b, _ := json.Marshal(body)
	return tusd.Error{ErrorCode: body.Error.Code, Message: body.Error.Message,
		HTTPResponse: tusd.HTTPResponse{StatusCode: status, Body: string(b) + "\n", Header: tusd.HTTPHeader{"Content-Type": "application/json"}}}
}

// responseWriter adds the headers tusd does not know of (Upload-Expires, the expiration
// extension), and turns tusd's own plain-text errors into the API's JSON envelope.
type responseWriter struct {
	http.ResponseWriter
	maxSize int64
	st      *state
	log     *slog.Logger
	status  int
	errBody *bytes.Buffer // a plain-text error held back to be answered as JSON
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	h := w.Header()
	if ext := h.Get("Tus-Extension"); ext != "" {
		h.Set("Tus-Extension", Extensions)
		h.Set("Tus-Max-Size", strconv.FormatInt(w.maxSize, 10))
	}
	if code < 300 && !w.st.expires.IsZero() && w.st.r.Method != http.MethodDelete {
		h.Set("Upload-Expires", w.st.expires.UTC().Format(http.TimeFormat))
	}
	if code >= 400 && !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		w.errBody = &bytes.Buffer{}
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.errBody != nil {
		if w.errBody.Len() < 4096 {
			w.errBody.Write(p[:min(len(p), 4096-w.errBody.Len())])
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// flushError answers a plain-text error of tusd's as JSON: the status's code, tusd's
// sentence as the message.
func (w *responseWriter) flushError() {
	if w.errBody == nil {
		return
	}
	msg := strings.TrimSpace(w.errBody.String())
	var body wire.ErrorBody
	body.Error.Code = codeOf(w.status)
	body.Error.Message = msg
	if msg == "" {
		body.Error.Message = http.StatusText(w.status)
	}
	body.Error.Details = map[string]any{"protocol": "tus"}
	if w.status == http.StatusInternalServerError {
		// tusd's 500s are errors it did not expect, such as the request body failing to
		// be read (the client's, which the API answers as such): answered as the API
		// answers its own, the text logged and the client given a request id.
		w.status, body = httpkit.ErrorOf(w.st.r, w.log, errors.New(msg))
	}
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if w.st.r.Method == http.MethodHead {
		h.Del("Content-Length")
		w.ResponseWriter.WriteHeader(w.status)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.ResponseWriter.WriteHeader(w.status)
	w.ResponseWriter.Write(append(b, '\n'))
}

// codeOf is the API's error code for a status tusd answers with.
func codeOf(status int) string {
	switch status {
	case http.StatusNotFound, http.StatusGone:
		return "not_found"
	case http.StatusConflict, http.StatusPreconditionFailed, http.StatusLocked:
		return "conflict"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusMethodNotAllowed, http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusNotImplemented:
		return "invalid_request"
	case http.StatusRequestTimeout:
		return "invalid_request"
	case http.StatusServiceUnavailable:
		return "unavailable"
	}
	if status >= 500 {
		return "internal"
	}
	return "invalid_request"
}
