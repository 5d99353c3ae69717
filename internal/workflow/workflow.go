// Package workflow owns tool sessions as a user lives them (docs/spec.md §6, §7): an
// initial run that replaces or keeps the session's files and starts its state, next
// actions guarded by state_rev, and the editor's sandbox session (editor.go). The API
// and the web UI both drive it; run executes.
package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
)

// Errors of the workflow.
var (
	// ErrUnknownAction means the action is not one the session's latest run offered.
	ErrUnknownAction = errors.New("unknown action")
	// ErrActionTooLarge means an action's input and state together are over MaxActionBytes.
	ErrActionTooLarge = errors.New("action too large")
)

// MaxActionBytes caps action.json, which also travels as an environment variable: the
// kernel holds one environment string to 128 KiB (MAX_ARG_STRLEN), escapes included.
const MaxActionBytes = 120 << 10

// Service runs tools as sessions: initial runs that replace or inject the session's
// files and start its state, and action runs guarded by state_rev.
type Service struct {
	runs     *run.Service
	sessions *session.Service
	catalog  *catalog.Service
	// editorWall is the wall time of runs in an editor context.
	editorWall time.Duration
	// compiled remembers the versions whose source compiles (Compiles).
	compiled compiled
}

// New returns the workflow over runs and sessions. A run's memory.json comes from the
// catalog's saved settings; runs in an editor context get editorWall as their wall time.
func New(runs *run.Service, sessions *session.Service, cat *catalog.Service, editorWall time.Duration) *Service {
	return &Service{runs: runs, sessions: sessions, catalog: cat, editorWall: editorWall}
}

// wallTime is the wall time of a run in c: 0 (the production limit) or the editor's.
func (st *Service) wallTime(c session.Context) time.Duration {
	if c.IsEditor() {
		return st.editorWall
	}
	return 0
}

// Initial is an initial run: the version, who runs it, in which context, and its upload.
type Initial struct {
	Tool    store.Tool
	Version store.ToolVersion
	User    store.User
	Context session.Context
	// Body is the request whose multipart body is the run's upload (files in field
	// "files", inputs as JSON in "inputs", and the text fields Fields names); nil: the
	// run sends no files, and Form holds its inputs.
	Body   *http.Request
	Fields []string
	// Files, with Body nil, are files already on the server (staged files a JSON run
	// names) to copy in as the upload's files, by the same rules and caps.
	Files []upload.Source
	// Accept, when set, sees the form read from Body before anything else is checked:
	// an error refuses the upload (a web form's anti-forgery token, say), and it may set
	// the form's inputs (from a web form's typed fields).
	Accept func(*upload.Form) error
	Form   upload.Form
}

// Initial submits an initial run and returns it queued. Its inputs and the names of its
// files are checked against the version's input_schema first (docs/spec.md §5b): a refusal
// stores and runs nothing, and the tool sees the normalised inputs. An upload with files
// replaces the session's files (after every file was validated), one without keeps and
// injects them; a run that offers next actions starts the session over with its state.
// Initial reads the upload into the run's input directory itself (see submit, which
// owns that directory until the run has it). The API, the web UI and so the CLI all
// start initial runs here, so the rules hold for each alike. In the editor's sandbox a
// version that does not compile is refused first (Compiles).
func (st *Service) Initial(ctx context.Context, in Initial) (store.Run, error) {
	if in.Context.IsEditor() {
		if err := st.Compiles(ctx, in.Version); err != nil {
			return store.Run{}, err
		}
	}
	k := in.Context.Key(in.Tool.ID, in.User.ID)
	return st.submit(ctx, func(dir string) (run.Request, error) {
		form := in.Form
		if in.Body != nil {
			var err error
			form, err = upload.ReadRequest(in.Body, dir, st.runs.UploadLimits(), upload.Options{FileField: "files", TextFields: in.Fields})
			if err != nil {
				return run.Request{}, err
			}
		} else if len(in.Files) > 0 {
			// The server copies these bytes itself: one user's copies go one at a time,
			// and not at all past their runs' cap (HoldCopy).
			release, err := st.runs.HoldCopy(ctx, in.User.ID)
			if err != nil {
				return run.Request{}, err
			}
			form.Files, err = upload.CopyFiles(ctx, dir, st.runs.UploadLimits(), in.Files)
			release()
			if err != nil {
				return run.Request{}, err
			}
		}
		if in.Accept != nil {
			if err := in.Accept(&form); err != nil {
				return run.Request{}, err
			}
		}
		names := make([]string, len(form.Files))
		for i, f := range form.Files {
			names[i] = f.Name
		}
		// The schema was checked against the upload cap when it was stored; a cap lowered
		// since does not make it unusable (the upload itself still keeps to the cap).
		schema, err := contract.ParseInputSchema(in.Version.InputSchema, 0)
		if err != nil {
			return run.Request{}, err
		}
		counted, useKept, err := st.countedFiles(ctx, schema, k, names)
		if err != nil {
			return run.Request{}, err
		}
		inputs, err := contract.NormalizeInputs(schema, form.Inputs, counted)
		if err != nil {
			return run.Request{}, err
		}
		memory, err := st.catalog.Memory(ctx, in.User.ID, in.Version, in.Context)
		if err != nil {
			return run.Request{}, err
		}
		// The session's files change only once the run is admitted: a run refused for
		// capacity leaves them as they were.
		files := func(ctx context.Context) error {
			if len(form.Files) > 0 {
				return st.sessions.Replace(ctx, k, dir, names)
			}
			if useKept {
				_, err := st.sessions.Inject(ctx, k, dir)
				return err
			}
			return nil
		}
		return run.Request{Tool: in.Tool, Version: in.Version, User: in.User, Context: in.Context.String(), Kind: store.KindInitial,
			Inputs: inputs, Memory: memory, WallTime: st.wallTime(in.Context), Before: files}, nil
	})
}

// submit makes a run's input directory, has fill put the run's files in it and say
// what run to make, and submits that run with the directory as its input. The
// directory is the run's once Submit admits it (the run removes it when done with it);
// until then it is submit's, and a refusal anywhere before or by Submit removes it here,
// the one place that does.
func (st *Service) submit(ctx context.Context, fill func(dir string) (run.Request, error)) (store.Run, error) {
	dir, err := st.runs.NewInputDir()
	if err != nil {
		return store.Run{}, err
	}
	req, err := fill(dir)
	var rn store.Run
	if err == nil {
		req.InputDir = dir
		rn, err = st.runs.Submit(ctx, req)
	}
	if err != nil {
		os.RemoveAll(dir)
	}
	return rn, err
}

// Action is one submission of a next action.
type Action struct {
	Tool             store.Tool
	Version          store.ToolVersion
	User             store.User
	Context          session.Context
	ActionID         string
	Input            map[string]any
	ExpectedStateRev int64
}

// Action submits an action run as docs/spec.md §6 orders it and returns it queued: the revision
// must be current, the action one the latest run offered and its input valid; the run
// gets the server's state and a snapshot of the session files; when it succeeds a
// compare-and-swap from expected to expected+1 records its state. A run that loses that
// race succeeds without a state_rev: see LostRace. In the editor's sandbox a version that
// does not compile is refused first (Compiles).
func (st *Service) Action(ctx context.Context, a Action) (store.Run, error) {
	if a.Context.IsEditor() {
		if err := st.Compiles(ctx, a.Version); err != nil {
			return store.Run{}, err
		}
	}
	k := a.Context.Key(a.Tool.ID, a.User.ID)
	sess, err := st.sessions.Get(ctx, k)
	if err != nil {
		return store.Run{}, err
	}
	if a.ExpectedStateRev != sess.StateRev {
		return store.Run{}, Conflict(a.ExpectedStateRev, sess.StateRev)
	}
	latest, err := st.runs.Get(ctx, sess.LatestRunID)
	if err != nil {
		return store.Run{}, err
	}
	action, err := Offered(latest, a.ActionID)
	if err != nil {
		return store.Run{}, err
	}
	if err := contract.ValidateInput(action, a.Input); err != nil {
		return store.Run{}, err
	}
	if a.Input == nil {
		a.Input = map[string]any{}
	}
	act := contract.Action{ActionID: a.ActionID, Input: a.Input, State: json.RawMessage(sess.State)}
	b, _ := json.Marshal(act)
	if len(b) > MaxActionBytes {
		return store.Run{}, errs.New(ErrActionTooLarge, map[string]any{"bytes": len(b), "limit_bytes": MaxActionBytes},
			"the action's input and the session's state are %d bytes together; the limit is %d (120 KiB)", len(b), MaxActionBytes)
	}
	memory, err := st.catalog.Memory(ctx, a.User.ID, a.Version, a.Context)
	if err != nil {
		return store.Run{}, err
	}
	expected := a.ExpectedStateRev
	return st.submit(ctx, func(dir string) (run.Request, error) {
		if _, err := st.sessions.Inject(ctx, k, dir); err != nil {
			return run.Request{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, "action.json"), b, 0o444); err != nil {
			return run.Request{}, err
		}
		return run.Request{Tool: a.Tool, Version: a.Version, User: a.User, Context: a.Context.String(), Kind: store.KindAction,
			ActionID: a.ActionID, ActionLabel: action.Label, Action: &act, Memory: memory, WallTime: st.wallTime(a.Context),
			ExpectedRev: &expected}, nil
	})
}

// countedFiles are the files an initial run's file field is checked against, and
// whether a run that sends none gets the session's kept files. A run that sends files is
// checked with those. One that sends none gets the kept files when its version has no
// input_schema (as before schemas), or when they fit its file field: their number within
// min..max and each of a type it accepts, so a user who changes only the typed inputs
// need not upload the same files again. Kept files that do not fit (from an older
// version, say) are left out, not held against the user, and a version without a file
// field gets none.
func (st *Service) countedFiles(ctx context.Context, schema contract.InputSchema, k store.SessionKey, sent []string) ([]string, bool, error) {
	if len(sent) > 0 {
		return sent, false, nil
	}
	if schema == nil {
		return nil, true, nil
	}
	field := schema.FileField()
	if field == nil {
		return nil, false, nil
	}
	kept, _, err := st.sessions.Files(ctx, k)
	if err != nil {
		return nil, false, err
	}
	names := make([]string, len(kept))
	for i, f := range kept {
		names[i] = f.Name
		if len(field.Accept) > 0 && !contract.Accepts(field.Accept, f.Name) {
			return nil, false, nil
		}
	}
	if len(names) == 0 || (field.Min != nil && len(names) < *field.Min) || (field.Max != nil && len(names) > *field.Max) {
		return nil, false, nil
	}
	return names, true, nil
}

// Offered returns the next action id that run r offered, or an ErrUnknownAction naming
// the ones it did offer.
func Offered(r store.Run, id string) (contract.NextAction, error) {
	offered, err := run.NextActionsOf(r)
	if err != nil {
		return contract.NextAction{}, err
	}
	var ids []string
	for _, a := range offered {
		if a.ActionID == id {
			return a, nil
		}
		ids = append(ids, a.ActionID)
	}
	return contract.NextAction{}, errs.New(ErrUnknownAction, map[string]any{"action_id": id, "offered": ids},
		"%q is not an action this session offers now; it offers: %s", id, strings.Join(ids, ", "))
}

// LostRace reports whether r is an action run that succeeded but whose state was not
// recorded, because another write to the session won meanwhile.
func LostRace(r store.Run) bool {
	return r.Kind == store.KindAction && r.Status == store.StatusSucceeded && r.StateRev == nil
}

// Conflict is the error for a submission made at revision expected when the session is
// at current.
func Conflict(expected, current int64) error {
	return errs.New(session.ErrConflict, map[string]any{"expected": expected, "current": current},
		"This session changed in another tab or window (it is at revision %d, not %d). Reload to continue.", current, expected)
}
