package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/staging"
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
	errRange          = errors.New("range not satisfiable")
	errPrecondition   = errors.New("precondition failed")
	// errBodyIdle is a request body that sent nothing for the idle timeout.
	errBodyIdle = errors.New("request body idle")
	// errBodyRead is a request body that could not be read to its end: the client went
	// away or broke the framing.
	errBodyRead = errors.New("request body interrupted")
)

// apiError is one row of the error table: a package error and what the client sees. msg
// is the sentence a client gets when the error carries none written for them.
type apiError struct {
	err    error
	status int
	code   string
	msg    string
}

// atCapacity are the 503s that waiting cures: they carry Retry-After (SPEC §3). Any
// other 503 says something waiting will not change.
var atCapacity = []error{run.ErrBusy, sandbox.ErrFull, staging.ErrUnavailable}

// errorTable maps every sentinel a handler may return to an HTTP status and an error code
// (SPEC §3). It is the only place that chooses a status for an error. The first match,
// by errors.Is, wins.
var errorTable = []apiError{
	{errInvalidRequest, http.StatusBadRequest, "invalid_request", "the request is not valid"},
	{account.ErrInvalid, http.StatusBadRequest, "invalid_request", "the user name, role or password is not valid"},
	{errUnauthorized, http.StatusUnauthorized, "unauthorized", "this needs an API token: send the header Authorization: Bearer <token>"},
	{account.ErrUnauthenticated, http.StatusUnauthorized, "unauthorized", "the token or the sign-in is not valid"},
	{errForbidden, http.StatusForbidden, "forbidden", "you may not do this"},
	{account.ErrForbidden, http.StatusForbidden, "forbidden", "your role does not allow this"},
	{errNotFound, http.StatusNotFound, "not_found", "nothing was found at this address"},
	{store.ErrNotFound, http.StatusNotFound, "not_found", "nothing was found at this address"},
	{errMethod, http.StatusMethodNotAllowed, "invalid_request", "this method is not allowed here"},
	{errBodyIdle, http.StatusRequestTimeout, "invalid_request", "the request body stopped arriving; send the request again"},
	{errBodyRead, http.StatusBadRequest, "invalid_request", "the request body ended before it was complete; send the request again"},
	{store.ErrConflict, http.StatusConflict, "conflict", "this conflicts with something that already exists"},
	{errTooLarge, http.StatusRequestEntityTooLarge, "too_large", "the request body is larger than the limit"},
	{blob.ErrInvalidKey, http.StatusBadRequest, "invalid_key", "the key must look like files/<name>, using only letters, digits and ._-"},
	{staging.ErrNotFound, http.StatusNotFound, "not_found", "there is no such file"},
	{blob.ErrNotFound, http.StatusNotFound, "not_found", "there is no such file"},
	{staging.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large", "the file is larger than the limit"},
	{staging.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "the file store is not reachable; try again in a moment"},
	{errRange, http.StatusRequestedRangeNotSatisfiable, "range_not_satisfiable", "the requested range is outside the file"},
	{errPrecondition, http.StatusPreconditionFailed, "conflict", "the file is not the version the request's If-Match or If-Unmodified-Since names"},
	{staging.ErrQuota, http.StatusInsufficientStorage, "quota_exceeded", "the file does not fit in the storage quota"},
	{upload.ErrInvalid, http.StatusBadRequest, "invalid_upload", "the upload is not valid multipart/form-data"},
	{upload.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large", "the upload is larger than the limit"},
	{run.ErrBusy, http.StatusServiceUnavailable, "unavailable", "the server is running all the tools it can; try again in a moment"},
	{run.ErrNotFound, http.StatusNotFound, "not_found", "there is no such run"},
	{run.ErrUnknownAction, http.StatusBadRequest, "unknown_action", "the run offers no such action"},
	{run.ErrActionTooLarge, http.StatusRequestEntityTooLarge, "too_large", "the action's input is larger than the limit"},
	{catalog.ErrNotFound, http.StatusNotFound, "not_found", "there is no such tool"},
	{catalog.ErrForbidden, http.StatusForbidden, "forbidden", "you may not change this tool"},
	{catalog.ErrInvalid, http.StatusBadRequest, "invalid_request", "the tool is not valid"},
	{catalog.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large", "the tool's source is larger than the limit"},
	{catalog.ErrUnpublished, http.StatusConflict, "conflict", "the tool has no published version"},
	{contract.ErrInvalidInput, http.StatusBadRequest, "invalid_request", "the input is not valid"},
	{contract.ErrInvalidSchema, http.StatusBadRequest, "invalid_request", "the tool's input_schema or settings_schema is not valid"},
	{session.ErrConflict, http.StatusConflict, "conflict", "the session changed in the meantime; reload it and try again"},
	{session.ErrNoSession, http.StatusNotFound, "not_found", "there is no session for this tool yet; run the tool first"},
	{sandbox.ErrNotFound, http.StatusNotFound, "not_found", "there is no such sandbox"},
	{sandbox.ErrInvalid, http.StatusBadRequest, "invalid_request", "the sandbox request is not valid"},
	{sandbox.ErrTooMany, http.StatusConflict, "conflict", "you hold all the sandboxes one user may; delete one first"},
	{sandbox.ErrElsewhere, http.StatusConflict, "conflict", "the sandbox is held by another server"},
	{sandbox.ErrFull, http.StatusServiceUnavailable, "unavailable", "the server holds all the sandboxes it may; try again later"},
	{sandbox.ErrBudget, http.StatusInsufficientStorage, "quota_exceeded", "the sandboxes' memory budget is used up; delete a sandbox first"},
	{sandbox.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "agent sandboxes are not available on this server"},
	{runner.ErrPath, http.StatusBadRequest, "invalid_request", "the workspace path is not valid"},
	{runner.ErrNoFile, http.StatusNotFound, "not_found", "there is no such file in the workspace"},
	{runner.ErrNoSpace, http.StatusInsufficientStorage, "quota_exceeded", "the file does not fit in the workspace"},
}

// ErrorStatus returns the HTTP status and error code of err, from the error table: the
// web UI answers with the same statuses as the API.
func ErrorStatus(err error) (int, string) {
	status, code, _, _ := Describe(err)
	return status, code
}

// Describe is what a client is told about err: the status and code of its row in the
// error table, and a message and details safe to show. Only an *errs.Error brings its own
// message, a sentence written for the client; any other text in err (a blob key, a
// package's prefix, a driver's words) stays in the log, and the client gets the row's
// sentence. An error in no row is a 500 with no message: the caller logs it and gives a
// reference instead.
func Describe(err error) (status int, code, message string, details map[string]any) {
	var (
		e   *errs.Error
		mbe *http.MaxBytesError
	)
	if !errors.As(err, &e) && errors.As(err, &mbe) {
		// A body cap that no handler named (http.MaxBytesReader): the limit is all there is to say.
		e = errs.New(errTooLarge, map[string]any{"limit_bytes": mbe.Limit}, "the request body is larger than the %d-byte limit", mbe.Limit)
		err = e
	}
	for _, row := range errorTable {
		if !errors.Is(err, row.err) {
			continue
		}
		if e != nil {
			return row.status, row.code, e.Message, e.Details
		}
		return row.status, row.code, row.msg, nil
	}
	return http.StatusInternalServerError, "internal", "", nil
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
// logged with the request id and whose body carries only that id. When reading the
// request body failed, that is the answer, whatever the handler made of it (a cancelled
// context, a storage error around it).
func (s *Server) errorOf(r *http.Request, err error) (int, errorBody) {
	if berr := BodyError(r); berr != nil {
		err = berr
	}
	var body errorBody
	status, code, msg, details := Describe(err)
	body.Error.Code = code
	if status == http.StatusInternalServerError {
		rid := requestID(r.Context())
		s.log.LogAttrs(r.Context(), slog.LevelError, "internal error", slog.String("request_id", rid),
			slog.String("route", r.Pattern), slog.String("error", err.Error()))
		body.Error.Message = "Something went wrong on the server. If it keeps happening, report request id " + rid + "."
		body.Error.Details = map[string]any{"request_id": rid}
		return status, body
	}
	body.Error.Message, body.Error.Details = msg, details
	return status, body
}

// ProtocolError is the JSON body of an error that net/http answers itself, before any
// handler runs: header fields over the limit (too_large), or a request it cannot read
// (invalid_request, whatever the status: 400, 501 for a transfer encoding, 505 for a
// protocol version).
func ProtocolError(status int, message string, details map[string]any) []byte {
	var body errorBody
	body.Error.Code = "invalid_request"
	if status == http.StatusRequestEntityTooLarge || status == http.StatusRequestHeaderFieldsTooLarge {
		body.Error.Code = "too_large"
	}
	body.Error.Message, body.Error.Details = message, details
	b, _ := json.Marshal(body)
	return append(b, '\n')
}
