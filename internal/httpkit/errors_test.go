package httpkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// TestReasonsAreDistinct: details.reason names one row of the error table, so a client
// can tell every failure from every other by it (tool_not_found is not run_not_found).
func TestReasonsAreDistinct(t *testing.T) {
	seen := map[string]int{}
	for i, r := range errorTable {
		if r.reason == "" {
			continue
		}
		if j, ok := seen[r.reason]; ok {
			t.Errorf("reason %q is given by row %d (%v) and row %d (%v)", r.reason, j, errorTable[j].err, i, r.err)
		}
		seen[r.reason] = i
		if r.reason != strings.ToLower(r.reason) || strings.ContainsAny(r.reason, " -.") {
			t.Errorf("reason %q is not snake_case", r.reason)
		}
	}
	if len(seen) < 40 {
		t.Errorf("only %d reasons: did the table lose its reasons?", len(seen))
	}
}

// TestNoRowMapsALowerLayer: the store's sentinels (and the blob store's missing object)
// are the services' to translate into their own; a row for one would answer for
// whichever service let it through, and say nothing about which thing is missing.
func TestNoRowMapsALowerLayer(t *testing.T) {
	lower := []error{store.ErrNotFound, store.ErrConflict, store.ErrOverQuota, store.ErrOverTotal, store.ErrTooMany, store.ErrFull, blob.ErrNotFound}
	for _, l := range lower {
		for i, r := range errorTable {
			if errors.Is(r.err, l) || errors.Is(l, r.err) {
				t.Errorf("row %d (%v) maps %v", i, r.err, l)
			}
		}
		if status, code, msg, details := Describe(fmt.Errorf("reading the tool: %w", l)); status != http.StatusInternalServerError || code != "internal" || msg != "" || details != nil {
			t.Errorf("Describe(%v) = %d %s %q %v; want a 500 with nothing said", l, status, code, msg, details)
		}
	}
}

// TestDescribe: an *errs.Error keeps its own message and details, and a bare or wrapped
// sentinel gets its row's sentence, so that no text a package put around it reaches the
// client; the row's reason is added to details without touching the error's own map.
func TestDescribe(t *testing.T) {
	detailed := errs.New(catalog.ErrNotFound, map[string]any{"tool": "nope"}, "no tool %q", "nope")
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		code    string
		msg     string
		details map[string]any
	}{
		{"errs.Error", detailed, 404, "not_found", `no tool "nope"`, map[string]any{"tool": "nope", "reason": "tool_not_found"}},
		{"wrapped errs.Error", fmt.Errorf("loading t_01J: %w", detailed), 404, "not_found", `no tool "nope"`, map[string]any{"tool": "nope", "reason": "tool_not_found"}},
		{"errs.Error without details", errs.New(run.ErrNotFound, nil, "no run %q", "r_1"), 404, "not_found", `no run "r_1"`, map[string]any{"reason": "run_not_found"}},
		{"bare sentinel", account.ErrExists, 409, "conflict", "a user of that name already exists", map[string]any{"reason": "user_exists"}},
		{"wrapped sentinel", fmt.Errorf("blob b_01J at /skrip-data/x: %w", run.ErrNoArtifact), 404, "not_found", "the run has no such artifact", map[string]any{"reason": "artifact_not_found"}},
		{"row without a reason", errs.New(ErrInvalidRequest, nil, "no body"), 400, "invalid_request", "no body", nil},
		{"row without a reason, with details", errs.New(ErrInvalidRequest, map[string]any{"field": "x"}, "bad x"), 400, "invalid_request", "bad x", map[string]any{"field": "x"}},
		{"body cap", fmt.Errorf("reading: %w", &http.MaxBytesError{Limit: 10}), 413, "too_large", "the request body is larger than the 10-byte limit", map[string]any{"limit_bytes": int64(10)}},
		{"unknown", errors.New("pq: relation runs is on fire"), 500, "internal", "", nil},
		{"unknown, wrapping a store error", fmt.Errorf("x: %w", store.ErrConflict), 500, "internal", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before map[string]any
			var e *errs.Error
			if errors.As(tc.err, &e) && e.Details != nil {
				before = map[string]any{}
				for k, v := range e.Details {
					before[k] = v
				}
			}
			status, code, msg, details := Describe(tc.err)
			if status != tc.status || code != tc.code || msg != tc.msg || !reflect.DeepEqual(details, tc.details) {
				t.Errorf("Describe = %d %s %q %v\nwant %d %s %q %v", status, code, msg, details, tc.status, tc.code, tc.msg, tc.details)
			}
			if e != nil && !reflect.DeepEqual(e.Details, before) {
				t.Errorf("Describe changed the error's details: %v, was %v", e.Details, before)
			}
			// A second description is the same: nothing of the first stayed behind.
			if s2, c2, m2, d2 := Describe(tc.err); s2 != status || c2 != code || m2 != msg || !reflect.DeepEqual(d2, details) {
				t.Errorf("described again: %d %s %q %v", s2, c2, m2, d2)
			}
		})
	}
}

// TestWriteError: the answer carries the request id; an error no row covers is logged
// with its text and that id, while the client gets only the id; a known error's inner
// text (a blob key, a path) reaches neither the body nor, being no fault, the error log.
func TestWriteError(t *testing.T) {
	const rid = "req-0123abcd"
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		code    string
		secret  string // in the error's text; never in the body
		logged  bool   // logged as an internal error
		headers map[string]string
	}{
		{"internal", fmt.Errorf("query runs: %w", errors.New("pq: password authentication failed for skrip@10.0.0.5")), 500, "internal", "10.0.0.5", true, nil},
		{"store error", fmt.Errorf("tool t_01J: %w", store.ErrNotFound), 500, "internal", "t_01J", true, nil},
		{"known, wrapped", fmt.Errorf("blob b_01J under /skrip-data/blobs: %w", run.ErrNoArtifact), 404, "not_found", "/skrip-data/blobs", false, nil},
		{"busy", errs.New(run.ErrBusy, nil, "every worker is busy"), 503, "unavailable", "", false, map[string]string{"Retry-After": "5"}},
		{"damaged bytes, a fault the table names", errs.New(staging.ErrDamaged, map[string]any{"key": "files/fox"}, "checksum mismatch: the stored bytes of files/fox are not those it was stored with"), 500, "internal", "", false, nil},
		{"busy, asks to wait", errs.New(run.ErrBusy, nil, "every worker is busy").Retry(2500 * time.Millisecond), 503, "unavailable", "", false, map[string]string{"Retry-After": "3"}},
		{"unauthenticated", errs.New(account.ErrUnauthenticated, nil, "the token is not valid"), 401, "unauthorized", "", false,
			map[string]string{"WWW-Authenticate": `Bearer realm="skrip"`}},
	} {
		for _, via := range []string{"WriteError", "ErrorOf"} {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				var logs bytes.Buffer
				log := slog.New(slog.NewJSONHandler(&logs, nil))
				h := Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if via == "WriteError" {
						WriteError(w, r, log, tc.err)
						return
					}
					status, body := ErrorOf(r, log, tc.err)
					WriteJSON(w, status, body)
				}), log, metrics.New(), 0, Front{})
				req := httptest.NewRequest("GET", "/api/v1/x", nil)
				req.Header.Set("X-Request-Id", rid)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)

				var body wire.ErrorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
					t.Fatalf("body %q: %v", rec.Body, err)
				}
				if rec.Code != tc.status || body.Error.Code != tc.code || body.Error.Message == "" {
					t.Errorf("answer %d %s", rec.Code, rec.Body)
				}
				if tc.secret != "" && strings.Contains(rec.Body.String(), tc.secret) {
					t.Errorf("the body tells %q: %s", tc.secret, rec.Body)
				}
				if got := rec.Header().Get("X-Request-Id"); got != rid {
					t.Errorf("X-Request-Id = %q", got)
				}
				if via == "WriteError" {
					for k, v := range tc.headers {
						if got := rec.Header().Get(k); got != v {
							t.Errorf("%s = %q, want %q", k, got, v)
						}
					}
				}

				var internal []map[string]any
				for line := range strings.Lines(logs.String()) {
					var rec map[string]any
					if err := json.Unmarshal([]byte(line), &rec); err != nil {
						t.Fatalf("log line %q: %v", line, err)
					}
					if rec["msg"] == "internal error" {
						internal = append(internal, rec)
					}
				}
				if !tc.logged {
					if len(internal) != 0 {
						t.Errorf("logged as internal: %v", internal)
					}
					if tc.status == http.StatusInternalServerError && (body.Error.Details["request_id"] != rid || !strings.Contains(body.Error.Message, rid) ||
						!strings.Contains(body.Error.Message, "checksum mismatch") || body.Error.Details["reason"] == nil) {
						t.Errorf("a 500 the table names lacks its sentence, reason or request id: %s", rec.Body)
					}
					return
				}
				if len(internal) != 1 || internal[0]["request_id"] != rid || internal[0]["error"] != tc.err.Error() {
					t.Errorf("internal error log = %v; want one record with request_id %s and error %q", internal, rid, tc.err)
				}
				if body.Error.Details["request_id"] != rid || !strings.Contains(body.Error.Message, rid) {
					t.Errorf("the body does not give the request id: %s", rec.Body)
				}
				if len(body.Error.Details) != 1 {
					t.Errorf("a 500's details say more than the request id: %v", body.Error.Details)
				}
			})
		}
	}
}
