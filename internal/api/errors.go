package api

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/files"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
)

// Request-level sentinels, for problems the api package finds itself.
var (
	errInvalidRequest = errors.New("invalid request")
	errUnauthorized   = errors.New("unauthorized")
	errForbidden      = errors.New("forbidden")
	errNotFound       = errors.New("not found")
	errTooLarge       = errors.New("too large")
	errMethod         = errors.New("method not allowed")
)

// apiError is one row of the error table: a package error and what the client sees.
type apiError struct {
	err    error
	status int
	code   string
}

// atCapacity are the 503s that waiting cures: they carry Retry-After (SPEC §3). Any
// other 503 says something waiting will not change.
var atCapacity = []error{run.ErrBusy, sandbox.ErrFull}

// errorTable maps every sentinel a handler may return to an HTTP status and an error code
// (SPEC §3). It is the only place that chooses a status for an error. The first match,
// by errors.Is, wins.
var errorTable = []apiError{
	{errInvalidRequest, http.StatusBadRequest, "invalid_request"},
	{account.ErrInvalid, http.StatusBadRequest, "invalid_request"},
	{errUnauthorized, http.StatusUnauthorized, "unauthorized"},
	{account.ErrUnauthenticated, http.StatusUnauthorized, "unauthorized"},
	{errForbidden, http.StatusForbidden, "forbidden"},
	{account.ErrForbidden, http.StatusForbidden, "forbidden"},
	{errNotFound, http.StatusNotFound, "not_found"},
	{store.ErrNotFound, http.StatusNotFound, "not_found"},
	{errMethod, http.StatusMethodNotAllowed, "invalid_request"},
	{store.ErrConflict, http.StatusConflict, "conflict"},
	{errTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{blob.ErrInvalidKey, http.StatusBadRequest, "invalid_key"},
	{files.ErrNotFound, http.StatusNotFound, "not_found"},
	{blob.ErrNotFound, http.StatusNotFound, "not_found"},
	{files.ErrKeyTaken, http.StatusConflict, "conflict"},
	{files.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{files.ErrQuota, http.StatusInsufficientStorage, "quota_exceeded"},
	{upload.ErrInvalid, http.StatusBadRequest, "invalid_upload"},
	{upload.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{run.ErrBusy, http.StatusServiceUnavailable, "unavailable"},
	{run.ErrNotFound, http.StatusNotFound, "not_found"},
	{run.ErrUnknownAction, http.StatusBadRequest, "unknown_action"},
	{run.ErrActionTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{catalog.ErrNotFound, http.StatusNotFound, "not_found"},
	{catalog.ErrForbidden, http.StatusForbidden, "forbidden"},
	{catalog.ErrInvalid, http.StatusBadRequest, "invalid_request"},
	{catalog.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{catalog.ErrUnpublished, http.StatusConflict, "conflict"},
	{contract.ErrInvalidInput, http.StatusBadRequest, "invalid_request"},
	{session.ErrConflict, http.StatusConflict, "conflict"},
	{session.ErrNoSession, http.StatusNotFound, "not_found"},
	{sandbox.ErrNotFound, http.StatusNotFound, "not_found"},
	{sandbox.ErrInvalid, http.StatusBadRequest, "invalid_request"},
	{sandbox.ErrTooMany, http.StatusConflict, "conflict"},
	{sandbox.ErrElsewhere, http.StatusConflict, "conflict"},
	{sandbox.ErrFull, http.StatusServiceUnavailable, "unavailable"},
	{sandbox.ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
	{runner.ErrPath, http.StatusBadRequest, "invalid_request"},
	{runner.ErrNoFile, http.StatusNotFound, "not_found"},
	{runner.ErrNoSpace, http.StatusInsufficientStorage, "quota_exceeded"},
}

// ErrorStatus returns the HTTP status and error code of err, from the error table: the
// web UI answers with the same statuses as the API.
func ErrorStatus(err error) (int, string) {
	for _, row := range errorTable {
		if errors.Is(err, row.err) {
			return row.status, row.code
		}
	}
	return http.StatusInternalServerError, "internal"
}

// errorBody is the JSON shape of every error.
type errorBody struct {
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details,omitempty"`
	} `json:"error"`
}

// writeError answers with err's row of the error table. An error in no row is a 500: its
// text goes to the log with the request id, and the client gets only the request id.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := s.errorOf(r, err)
	for _, c := range atCapacity {
		if errors.Is(err, c) {
			w.Header().Set("Retry-After", "5")
		}
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="skrip"`)
	}
	writeJSON(w, status, body)
}

// errorOf is err's status and body: its row of the error table, or a 500 whose text is
// logged with the request id and whose body carries only that id.
func (s *Server) errorOf(r *http.Request, err error) (int, errorBody) {
	var body errorBody
	status, code := ErrorStatus(err)
	body.Error.Code = code
	if status == http.StatusInternalServerError {
		rid := requestID(r.Context())
		s.log.LogAttrs(r.Context(), slog.LevelError, "internal error", slog.String("request_id", rid),
			slog.String("route", r.Pattern), slog.String("error", err.Error()))
		body.Error.Message = "Something went wrong on the server. If it keeps happening, report request id " + rid + "."
		body.Error.Details = map[string]any{"request_id": rid}
		return status, body
	}
	body.Error.Message = err.Error()
	var e *errs.Error
	if errors.As(err, &e) {
		body.Error.Details = e.Details
	}
	return status, body
}
