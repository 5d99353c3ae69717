// Package httpkit is the HTTP plumbing the API and the web UI share: the one table that
// maps every package error to a status and an error code (docs/api.md "Errors"), request
// ids with the request log and metrics, request bodies that fail cleanly, JSON in and
// out, and who is asking (a bearer token, or the browser's cookie with its
// anti-forgery token).
package httpkit

import (
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/signon"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/upload"
	"github.com/skrip-dev/skrip/internal/wire"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// Request-level sentinels, for problems of the request itself that a handler finds.
var (
	// ErrInvalidRequest is a request that is malformed or names a bad value.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrUnauthorized is a request without a credential.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNoRoute is a path that no route serves.
	ErrNoRoute = errors.New("no route")
	// ErrTooLarge is a request body over its cap.
	ErrTooLarge = errors.New("too large")
	// ErrMethod is a method the path's routes do not take.
	ErrMethod = errors.New("method not allowed")
	// ErrRange is a Range header outside the file.
	ErrRange = errors.New("range not satisfiable")
	// ErrPrecondition is an If-Match or If-Unmodified-Since that the file does not meet.
	ErrPrecondition = errors.New("precondition failed")
	// errBodyIdle is a request body that sent nothing for the idle timeout.
	errBodyIdle = errors.New("request body idle")
	// errBodyRead is a request body that could not be read to its end: the client went
	// away or broke the framing.
	errBodyRead = errors.New("request body interrupted")
)

// row is one row of the error table: a package error and what the client sees. reason
// tells this failure from the others with the same code (details.reason: tool_not_found
// is not run_not_found); msg is the sentence a client gets when the error carries none
// written for them.
type row struct {
	err    error
	status int
	code   string
	reason string
	msg    string
}

// atCapacity are the 503s that waiting cures: they carry Retry-After (docs/spec.md §3). Any
// other 503 says something waiting will not change.
var atCapacity = []error{account.ErrBusy, account.ErrCLILoginsFull, run.ErrBusy, sandbox.ErrFull, staging.ErrUnavailable, signon.ErrUnavailable}

// errorTable maps every sentinel a handler may return to an HTTP status and an error code
// (docs/spec.md §3). It is the only place that chooses a status for an error. The first match,
// by errors.Is, wins. The store's sentinels and blob.ErrNotFound have no row: which thing
// is missing is the service's to say, in its own error, and one that slips through is the
// server's fault (a 500).
var errorTable = []row{
	{ErrInvalidRequest, http.StatusBadRequest, "invalid_request", "", "the request is not valid"},
	{account.ErrInvalid, http.StatusBadRequest, "invalid_request", "invalid_account", "the user name, role or password is not valid"},
	{ErrUnauthorized, http.StatusUnauthorized, "unauthorized", "no_token", "this needs an API token: send the header Authorization: Bearer <token>"},
	{account.ErrUnauthenticated, http.StatusUnauthorized, "unauthorized", "bad_credentials", "the token or the sign-in is not valid"},
	{account.ErrForgery, http.StatusForbidden, "forbidden", "csrf", "this form or request lacks the page's anti-forgery token; reload the page and try again"},
	{account.ErrForbidden, http.StatusForbidden, "forbidden", "role", "your role does not allow this"},
	{account.ErrScope, http.StatusForbidden, "forbidden", "token_scope", "this is outside the scope of the token the request was made with"},
	{account.ErrBadToken, http.StatusBadRequest, "invalid_request", "invalid_token", "the token's name, scope or expiry is not valid"},
	{account.ErrTokenNotFound, http.StatusNotFound, "not_found", "token_not_found", "there is no such token"},
	{account.ErrWebSessionNotFound, http.StatusNotFound, "not_found", "web_session_not_found", "there is no such signed-in browser"},
	{account.ErrTokenLimit, http.StatusConflict, "conflict", "token_limit", "the user holds as many tokens as one user may; revoke one first"},
	{account.ErrNotFound, http.StatusNotFound, "not_found", "user_not_found", "there is no such user"},
	{account.ErrExists, http.StatusConflict, "conflict", "user_exists", "a user of that name already exists"},
	{account.ErrOwnAccount, http.StatusConflict, "conflict", "own_account", "an admin cannot disable or delete their own account; another admin must"},
	{account.ErrLastAdmin, http.StatusConflict, "conflict", "last_admin", "that would leave no active admin; make another user admin first"},
	{account.ErrInvitationGone, http.StatusGone, "gone", "invitation_gone", "the invitation has been used or has expired; ask for a new one"},
	{account.ErrThrottled, http.StatusTooManyRequests, "rate_limited", "signin_throttled", "too many sign-ins failed lately from your address or for this name; wait as Retry-After says, then try again"},
	{account.ErrBusy, http.StatusServiceUnavailable, "unavailable", "passwords_busy", "the server is checking as many passwords as it can at once; try again in a moment"},
	{account.ErrCLILoginPending, http.StatusBadRequest, "invalid_request", "authorization_pending", "the login waits for its approval in the browser; poll again after the interval"},
	{account.ErrCLILoginDenied, http.StatusForbidden, "forbidden", "login_denied", "the login was denied in the browser"},
	{account.ErrCLILoginGone, http.StatusGone, "gone", "login_expired", "this login has expired or was already used; run skrip login again"},
	{account.ErrCLILoginNotFound, http.StatusNotFound, "not_found", "cli_login_not_found", "no login waits with this code"},
	{account.ErrCLILoginsPerAddress, http.StatusTooManyRequests, "rate_limited", "cli_logins_per_address", "your address has as many logins waiting as one may; wait as Retry-After says"},
	{account.ErrCLILoginsFull, http.StatusServiceUnavailable, "unavailable", "cli_logins_full", "the server has as many logins waiting as it may; wait as Retry-After says"},
	{account.ErrCLICodeThrottled, http.StatusTooManyRequests, "rate_limited", "cli_code_throttled", "too many codes that match no login lately; wait as Retry-After says"},
	{account.ErrPasswordsOff, http.StatusForbidden, "forbidden", "passwords_admin_only", "only admins may sign in with a password here; sign in through sign-on"},
	{account.ErrAccountClosed, http.StatusForbidden, "forbidden", "account_closed", "this account is disabled or deleted"},
	{signon.ErrOff, http.StatusNotFound, "not_found", "oidc_off", "sign-on is not set up on this server"},
	{signon.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "oidc_unavailable", "the sign-on provider does not answer; try again in a minute"},
	{signon.ErrState, http.StatusBadRequest, "invalid_request", "oidc_state", "this sign-on did not start in this browser, took too long, or was already used; start it again"},
	{signon.ErrProvider, http.StatusForbidden, "forbidden", "oidc_provider_error", "the sign-on provider did not sign you in"},
	{signon.ErrCode, http.StatusBadRequest, "invalid_request", "oidc_code_rejected", "the sign-on provider would not accept the sign-on's code; start it again"},
	{signon.ErrTokenExpired, http.StatusBadRequest, "invalid_request", "oidc_token_expired", "the sign-on provider's answer has expired; start the sign-on again"},
	{signon.ErrToken, http.StatusBadRequest, "invalid_request", "oidc_token_invalid", "the sign-on provider's answer could not be verified; start the sign-on again"},
	{signon.ErrDomain, http.StatusForbidden, "forbidden", "oidc_domain", "sign-on is not open to your e-mail domain here"},
	{signon.ErrUnverified, http.StatusForbidden, "forbidden", "oidc_email_unverified", "the sign-on provider says your e-mail is not verified"},
	{ErrNoRoute, http.StatusNotFound, "not_found", "no_route", "nothing was found at this address"},
	{ErrMethod, http.StatusMethodNotAllowed, "invalid_request", "method", "this method is not allowed here"},
	{errBodyIdle, http.StatusRequestTimeout, "invalid_request", "body_idle", "the request body stopped arriving; send the request again"},
	{errBodyRead, http.StatusBadRequest, "invalid_request", "body_interrupted", "the request body ended before it was complete; send the request again"},
	{ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large", "", "the request body is larger than the limit"},
	{blob.ErrInvalidKey, http.StatusBadRequest, "invalid_key", "", "the key must look like files/<name>, using only letters, digits and ._-"},
	{staging.ErrNotFound, http.StatusNotFound, "not_found", "file_not_found", "there is no such file"},
	{staging.ErrNoVersion, http.StatusNotFound, "not_found", "file_version_not_found", "the file has no such version"},
	{staging.ErrLinkNotFound, http.StatusNotFound, "not_found", "link_not_found", "this link does not work: it is wrong, has expired or was revoked"},
	{staging.ErrLinkUsedUp, http.StatusGone, "gone", "link_used_up", "this link has served all the bytes its max_downloads allow; ask whoever shared it for a new one"},
	{staging.ErrUploadLinkUsed, http.StatusGone, "gone", "upload_link_used", "this upload link has taken all the uploads it allows; ask whoever sent it for a new one"},
	{staging.ErrUploadLinkBusy, http.StatusConflict, "conflict", "upload_link_busy", "another upload through this link is under way; send the file again when it is done"},
	{staging.ErrTooManyUploadLinks, http.StatusConflict, "conflict", "upload_link_limit", "you hold as many upload links that still work as one may; revoke some or wait for them to expire"},
	{staging.ErrUploadLinkFull, http.StatusInsufficientStorage, "quota_exceeded", "upload_link_full", "the link's owner has no room for this file; tell whoever sent you the link"},
	{staging.ErrUploadType, http.StatusBadRequest, "invalid_upload", "upload_type", "this upload link does not take files of this type"},
	{staging.ErrBadCursor, http.StatusBadRequest, "invalid_request", "file_cursor", "the cursor is not one this server gave out; pass a listing's next cursor unchanged"},
	{staging.ErrInvalidLink, http.StatusBadRequest, "invalid_request", "invalid_link", "the link's ttl or max_downloads is not valid"},
	{staging.ErrInvalid, http.StatusBadRequest, "invalid_request", "", "the file's ttl or content type is not valid"},
	{staging.ErrUploadNotFound, http.StatusNotFound, "not_found", "upload_not_found", "there is no such upload"},
	{staging.ErrUploadOffset, http.StatusConflict, "conflict", "upload_offset", "the upload is not at that offset; ask for its offset (HEAD) and send from there"},
	{staging.ErrTooManyUploads, http.StatusConflict, "conflict", "upload_limit", "you have as many unfinished uploads as one may; finish or delete some first"},
	{staging.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large", "file_too_large", "the file is larger than the limit"},
	{staging.ErrDamaged, http.StatusInternalServerError, "internal", "checksum_mismatch", "checksum mismatch: the stored bytes of the file are not those it was stored with, so they were not sent; report this to an operator"},
	{staging.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "file_store_down", "the file store is not reachable; try again in a moment"},
	{ErrRange, http.StatusRequestedRangeNotSatisfiable, "range_not_satisfiable", "", "the requested range is outside the file"},
	{ErrPrecondition, http.StatusPreconditionFailed, "precondition_failed", "precondition", "the file is not the version the request's If-Match or If-Unmodified-Since names"},
	{staging.ErrPrecondition, http.StatusPreconditionFailed, "precondition_failed", "precondition_failed", "the file under the key is not the one If-Match or If-None-Match names; nothing was changed"},
	{staging.ErrQuota, http.StatusInsufficientStorage, "quota_exceeded", "file_quota", "the file does not fit in the storage quota"},
	{upload.ErrInvalid, http.StatusBadRequest, "invalid_upload", "", "the upload is not valid multipart/form-data"},
	{upload.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large", "upload_too_large", "the upload is larger than the limit"},
	{run.ErrBusy, http.StatusServiceUnavailable, "unavailable", "runs_busy", "the server is running all the tools it can; try again in a moment"},
	{run.ErrUserRuns, http.StatusTooManyRequests, "rate_limited", "runs_per_user", "you have as many runs waiting or running as one user may; wait for one to finish"},
	{run.ErrNotFound, http.StatusNotFound, "not_found", "run_not_found", "there is no such run"},
	{run.ErrNoArtifact, http.StatusNotFound, "not_found", "artifact_not_found", "the run has no such artifact"},
	{run.ErrLintTooLarge, http.StatusRequestEntityTooLarge, "too_large", "lint_too_large", "the source to check is larger than the limit"},
	{run.ErrUserLints, http.StatusTooManyRequests, "rate_limited", "lints_per_user", "you have as many lints running as one user may at once; the next change you type checks again"},
	{run.ErrLintUnavailable, http.StatusServiceUnavailable, "unavailable", "lint_unavailable", "the runtime has no Python linter; an operator rebuilds the runner image"},
	{run.ErrInvalidQuery, http.StatusBadRequest, "invalid_request", "run_query", "the runs query is not valid"},
	{workflow.ErrUnknownAction, http.StatusBadRequest, "unknown_action", "", "the run offers no such action"},
	{workflow.ErrActionTooLarge, http.StatusRequestEntityTooLarge, "too_large", "action_too_large", "the action's input is larger than the limit"},
	{workflow.ErrSyntax, http.StatusBadRequest, "invalid_request", "syntax_error", "the version's source does not compile, so it did not run; fix it and save a new version"},
	{workflow.ErrContinueFrom, http.StatusBadRequest, "invalid_request", "continue_from", "a sandbox session goes on only from another version of the same tool"},
	{catalog.ErrNotFound, http.StatusNotFound, "not_found", "tool_not_found", "there is no such tool"},
	{catalog.ErrNoVersion, http.StatusNotFound, "not_found", "version_not_found", "there is no such tool version"},
	{catalog.ErrForbidden, http.StatusForbidden, "forbidden", "not_tool_author", "you may not change this tool"},
	{catalog.ErrInvalid, http.StatusBadRequest, "invalid_request", "invalid_tool", "the tool is not valid"},
	{catalog.ErrExists, http.StatusConflict, "conflict", "tool_exists", "a tool with that slug already exists"},
	{catalog.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large", "source_too_large", "the tool's source is larger than the limit"},
	{catalog.ErrUnpublished, http.StatusConflict, "conflict", "unpublished", "the tool has no published version"},
	{catalog.ErrReportNotFound, http.StatusNotFound, "not_found", "report_not_found", "there is no such problem report"},
	{catalog.ErrRunNotReportable, http.StatusNotFound, "not_found", "not_run_owner", "only the person who ran the run may report it"},
	{catalog.ErrRunNotOver, http.StatusConflict, "conflict", "run_not_finished", "the run is not over yet; report it once it is"},
	{catalog.ErrReported, http.StatusConflict, "conflict", "run_reported", "the run is reported already"},
	{catalog.ErrReportInvalid, http.StatusBadRequest, "invalid_request", "invalid_report", "the problem report is not valid"},
	{catalog.ErrReportsThrottled, http.StatusTooManyRequests, "rate_limited", "reports_per_user", "you made as many problem reports lately as one may; try again later"},
	{catalog.ErrNoCategory, http.StatusNotFound, "not_found", "category_not_found", "there is no such category"},
	{catalog.ErrCategoryExists, http.StatusConflict, "conflict", "category_exists", "a category with that slug already exists"},
	{catalog.ErrInvalidCategory, http.StatusBadRequest, "invalid_request", "invalid_category", "the category is not valid"},
	{catalog.ErrAdminOnly, http.StatusForbidden, "forbidden", "admin_only", "only admins may do this"},
	{catalog.ErrReviewRequired, http.StatusForbidden, "forbidden", "review_required", "review before publishing is on: submit the version for review; only admins publish directly"},
	{catalog.ErrReviewOff, http.StatusConflict, "conflict", "review_off", "review before publishing is off: publish the version directly"},
	{catalog.ErrNoReview, http.StatusNotFound, "not_found", "review_not_found", "there is no such review"},
	{catalog.ErrReviewerOnly, http.StatusForbidden, "forbidden", "reviewer_only", "reviews are for reviewers and admins"},
	{catalog.ErrOwnReview, http.StatusForbidden, "forbidden", "own_review", "you submitted this version yourself; another reviewer or an admin decides on it"},
	{catalog.ErrReviewDecided, http.StatusConflict, "conflict", "review_decided", "the review has been decided already"},
	{catalog.ErrReviewPending, http.StatusConflict, "conflict", "review_pending", "the version waits for review already"},
	{catalog.ErrVersionPublished, http.StatusConflict, "conflict", "version_published", "the version is published already"},
	{catalog.ErrReviewInvalid, http.StatusBadRequest, "invalid_request", "invalid_review", "the review's note, comment or listing query is not valid"},
	{catalog.ErrNoMaintainer, http.StatusNotFound, "not_found", "maintainer_not_found", "the user is not a maintainer of the tool"},
	{catalog.ErrMaintainerInvalid, http.StatusBadRequest, "invalid_request", "invalid_maintainer", "only an active user with the author role or above may maintain a tool"},
	{catalog.ErrMaintainerKept, http.StatusConflict, "conflict", "maintainer_kept", "the tool's author and its last maintainer stay maintainers"},
	{contract.ErrInvalidInput, http.StatusBadRequest, "invalid_request", "invalid_input", "the input is not valid"},
	{contract.ErrInvalidSchema, http.StatusBadRequest, "invalid_request", "invalid_schema", "the tool's input_schema or settings_schema is not valid"},
	{session.ErrInvalidContext, http.StatusBadRequest, "invalid_request", "invalid_context", "the session context is not valid"},
	{session.ErrConflict, http.StatusConflict, "conflict", "state_rev", "the session changed in the meantime; reload it and try again"},
	{session.ErrNoSession, http.StatusNotFound, "not_found", "no_session", "there is no session for this tool yet; run the tool first"},
	{session.ErrQuota, http.StatusInsufficientStorage, "quota_exceeded", "session_files_quota", "the run's files do not fit in the storage quota"},
	{session.ErrNoStep, http.StatusNotFound, "not_found", "no_step", "the session keeps no such step to go back to"},
	{sandbox.ErrNotFound, http.StatusNotFound, "not_found", "sandbox_not_found", "there is no such sandbox"},
	{sandbox.ErrInvalid, http.StatusBadRequest, "invalid_request", "invalid_sandbox", "the sandbox request is not valid"},
	{sandbox.ErrTooMany, http.StatusConflict, "conflict", "sandbox_limit", "you hold all the sandboxes one user may; delete one first"},
	{sandbox.ErrElsewhere, http.StatusConflict, "conflict", "sandbox_elsewhere", "the sandbox is held by another server"},
	{sandbox.ErrLost, http.StatusGone, "gone", "sandbox_lost", "sandbox lost with its worker; create a new one"},
	{sandbox.ErrFull, http.StatusServiceUnavailable, "unavailable", "sandboxes_full", "the server holds all the sandboxes it may; try again later"},
	{sandbox.ErrBudget, http.StatusInsufficientStorage, "quota_exceeded", "sandbox_budget", "the sandboxes' memory budget is used up; delete a sandbox first"},
	{sandbox.ErrShare, http.StatusInsufficientStorage, "quota_exceeded", "sandbox_share", "your sandboxes reserve all of the memory budget one user may; delete one of them first"},
	{sandbox.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "sandboxes_off", "agent sandboxes are not available on this server"},
	{runner.ErrPath, http.StatusBadRequest, "invalid_request", "invalid_path", "the workspace path is not valid"},
	{runner.ErrNoFile, http.StatusNotFound, "not_found", "workspace_file_not_found", "there is no such file in the workspace"},
	{runner.ErrNoSpace, http.StatusInsufficientStorage, "quota_exceeded", "workspace_full", "the file does not fit in the workspace"},
	// Issue 33's versions: comparing two versions.
	{catalog.ErrOtherTool, http.StatusBadRequest, "invalid_request", "other_tool_version", "the two versions are of different tools"},
	{catalog.ErrDiffTooLarge, http.StatusRequestEntityTooLarge, "too_large", "diff_too_large", "the versions differ too much to compare"},
}

// Reasons lists what tells each row of the error table apart on a page: its reason, or
// its code where it has none. The web's catalogues hold a sentence for each, in every
// language (TestCatalogues), so a refusal never reaches a page in the server's English.
func Reasons() []string {
	var out []string
	seen := map[string]bool{}
	for _, row := range errorTable {
		r := row.reason
		if r == "" {
			r = row.code
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
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
// sentence. details carries the row's reason, which tells failures with one code apart.
// An error in no row is a 500 with no message: the caller logs it and gives a reference
// instead.
func Describe(err error) (status int, code, message string, details map[string]any) {
	var (
		e   *errs.Error
		mbe *http.MaxBytesError
	)
	if !errors.As(err, &e) && errors.As(err, &mbe) {
		// A body cap that no handler named (http.MaxBytesReader): the limit is all there is to say.
		e = errs.New(ErrTooLarge, map[string]any{"limit_bytes": mbe.Limit}, "the request body is larger than the %d-byte limit", mbe.Limit)
		err = e
	}
	for _, row := range errorTable {
		if !errors.Is(err, row.err) {
			continue
		}
		message = row.msg
		if e != nil {
			message, details = e.Message, maps.Clone(e.Details)
		}
		if row.reason != "" {
			if details == nil {
				details = map[string]any{}
			}
			details["reason"] = row.reason
		}
		return row.status, row.code, message, details
	}
	return http.StatusInternalServerError, "internal", "", nil
}

// AtCapacity reports whether err is a 503 that waiting cures.
func AtCapacity(err error) bool {
	for _, c := range atCapacity {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}

// RetryAfter is the whole seconds a client should wait before trying err's request
// again, for the Retry-After header: what the error asks for (rounded up), else 5 for a
// 503 that waiting cures, else 0 (no header).
func RetryAfter(err error) int {
	if d := errs.RetryAfterOf(err); d > 0 {
		return int((d + time.Second - 1) / time.Second)
	}
	if AtCapacity(err) {
		return 5
	}
	return 0
}

// WriteError answers with err's row of the error table, as JSON. An error in no row is a
// 500: its text goes to log with the request id, and the client gets only the request id.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	status, body := errorOf(r, log, err)
	if after := RetryAfter(err); after > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(after))
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="skrip"`)
	}
	WriteJSON(w, status, body)
}

// ErrorOf is err's status and JSON body, as WriteError would answer: for a stream
// whose status line has gone, to end it with the error.
func ErrorOf(r *http.Request, log *slog.Logger, err error) (int, wire.ErrorBody) {
	return errorOf(r, log, err)
}

// errorOf is err's status and body: its row of the error table, or a 500 whose text is
// logged with the request id and whose body carries only that id. When reading the
// request body failed, that is the answer, whatever the handler made of it (a cancelled
// context, a storage error around it).
func errorOf(r *http.Request, log *slog.Logger, err error) (int, wire.ErrorBody) {
	if berr := BodyError(r); berr != nil {
		err = berr
	}
	var body wire.ErrorBody
	status, code, msg, details := Describe(err)
	body.Error.Code = code
	if status == http.StatusInternalServerError {
		rid := RequestID(r.Context())
		if msg != "" {
			// A server fault the table names (bytes that do not match their checksum): the
			// row's sentence, which the service logged already, with the reference.
			details = maps.Clone(details)
			details["request_id"] = rid
			body.Error.Message, body.Error.Details = msg+" (request id "+rid+")", details
			return status, body
		}
		LogInternal(r, log, err)
		body.Error.Message = "Something went wrong on the server. If it keeps happening, report request id " + rid + "."
		body.Error.Details = map[string]any{"request_id": rid}
		return status, body
	}
	body.Error.Message, body.Error.Details = msg, details
	return status, body
}

// LogInternal logs err, which no row of the error table covers, with r's request id: the
// client is told only that id.
func LogInternal(r *http.Request, log *slog.Logger, err error) {
	log.LogAttrs(r.Context(), slog.LevelError, "internal error", slog.String("request_id", RequestID(r.Context())),
		slog.String("route", r.Pattern), slog.String("error", err.Error()))
}

// ProtocolError is the JSON body of an error that net/http answers itself, before any
// handler runs: header fields over the limit (too_large), or a request it cannot read
// (invalid_request, whatever the status: 400, 501 for a transfer encoding, 505 for a
// protocol version).
func ProtocolError(status int, message string, details map[string]any) []byte {
	var body wire.ErrorBody
	body.Error.Code = "invalid_request"
	if status == http.StatusRequestEntityTooLarge || status == http.StatusRequestHeaderFieldsTooLarge {
		body.Error.Code = "too_large"
	}
	body.Error.Message, body.Error.Details = message, details
	b, _ := json.Marshal(body)
	return append(b, '\n')
}

// DetailReasons are the values details.reason takes in an error answer: the reasons of
// the error table's rows, once each (the API's OpenAPI document enumerates them).
func DetailReasons() []string {
	var out []string
	seen := map[string]bool{}
	for _, row := range errorTable {
		if row.reason != "" && !seen[row.reason] {
			seen[row.reason] = true
			out = append(out, row.reason)
		}
	}
	return out
}
