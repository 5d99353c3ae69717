package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
)

// Errors of the session steps.
var (
	// ErrUnknownAction means the action is not one the session's latest run offered.
	ErrUnknownAction = errors.New("unknown action")
	// ErrNotFound means no such run, or one the user may not see.
	ErrNotFound = errors.New("run not found")
	// ErrActionTooLarge means an action's input and state together are over MaxActionBytes.
	ErrActionTooLarge = errors.New("action too large")
)

// MaxActionBytes caps action.json, which also travels as an environment variable: the
// kernel holds one environment string to 128 KiB (MAX_ARG_STRLEN), escapes included.
const MaxActionBytes = 120 << 10

// SandboxContext is the editor sandbox's context for a version (ADR-0038).
func SandboxContext(versionID string) string { return "sandbox:" + versionID }

// Steps runs tools as sessions (SPEC §6, §7): initial runs that replace or inject the
// session's files and start its state, and action runs guarded by state_rev. The API and
// the web UI both drive it.
type Steps struct {
	runs     *Service
	sessions *session.Service
}

// NewSteps returns Steps over runs and sessions.
func NewSteps(runs *Service, sessions *session.Service) *Steps {
	return &Steps{runs: runs, sessions: sessions}
}

// Initial is an initial run: the version, who runs it, in which context, and the upload
// that upload.Read accepted into Dir.
type Initial struct {
	Tool     store.Tool
	Version  store.ToolVersion
	User     store.User
	Context  string
	Dir      string
	Form     upload.Form
	WallTime time.Duration // 0: the production limit
}

// Initial submits an initial run and returns it queued. Its inputs and the names of its
// files are checked against the version's input_schema first (SPEC §5b): a refusal
// stores and runs nothing, and the tool sees the normalised inputs. An upload with files
// replaces the session's files (after every file was validated), one without keeps and
// injects them; a run that offers next actions starts the session over with its state.
// Dir is the run's from then on, or removed when the run is refused. The API, the web UI
// and so the CLI all start initial runs here, so the rules hold for each alike.
func (st *Steps) Initial(ctx context.Context, in Initial) (store.Run, error) {
	k := store.SessionKey{ToolID: in.Tool.ID, UserID: in.User.ID, Context: in.Context}
	names := make([]string, len(in.Form.Files))
	for i, f := range in.Form.Files {
		names[i] = f.Name
	}
	// The schema was checked against the upload cap when it was stored; a cap lowered
	// since does not make it unusable (the upload itself still keeps to the cap).
	schema, err := contract.ParseInputSchema(in.Version.InputSchema, 0)
	var counted []string
	var useKept bool
	if err == nil {
		counted, useKept, err = st.countedFiles(ctx, schema, k, names)
	}
	var inputs map[string]any
	if err == nil {
		inputs, err = contract.NormalizeInputs(schema, in.Form.Inputs, counted)
	}
	var memory []byte
	if err == nil {
		memory, err = st.memory(ctx, in.Version, k)
	}
	if err != nil {
		os.RemoveAll(in.Dir)
		return store.Run{}, err
	}
	// The session's files change only once the run is admitted: a run refused for
	// capacity leaves them as they were.
	files := func(ctx context.Context) error {
		if len(in.Form.Files) > 0 {
			return st.sessions.Replace(ctx, k, in.Dir, names)
		}
		if useKept {
			_, err := st.sessions.Inject(ctx, k, in.Dir)
			return err
		}
		return nil
	}
	rn, err := st.runs.Submit(ctx, Request{Tool: in.Tool, Version: in.Version, User: in.User, Context: in.Context, Kind: "initial",
		InputDir: in.Dir, Inputs: inputs, Memory: memory, WallTime: in.WallTime, Before: files,
		AfterSuccess: func(ctx context.Context, runID string, res contract.Result) (*int64, error) {
			if len(res.NextActions) == 0 {
				return nil, nil
			}
			rev, err := st.sessions.Start(ctx, k, res.State, runID)
			return &rev, err
		}})
	if err != nil {
		os.RemoveAll(in.Dir)
	}
	return rn, err
}

// Action is one submission of a next action.
type Action struct {
	Tool             store.Tool
	Version          store.ToolVersion
	User             store.User
	Context          string
	ActionID         string
	Input            map[string]any
	ExpectedStateRev int64
	WallTime         time.Duration // 0: the production limit
}

// Action submits an action run as SPEC §6 orders it and returns it queued: the revision
// must be current, the action one the latest run offered and its input valid; the run
// gets the server's state and a snapshot of the session files; when it succeeds a
// compare-and-swap from expected to expected+1 records its state. A run that loses that
// race succeeds without a state_rev: see LostRace.
func (st *Steps) Action(ctx context.Context, a Action) (store.Run, error) {
	k := store.SessionKey{ToolID: a.Tool.ID, UserID: a.User.ID, Context: a.Context}
	sess, err := st.sessions.Get(ctx, k)
	if err != nil {
		return store.Run{}, err
	}
	if a.ExpectedStateRev != sess.StateRev {
		return store.Run{}, Conflict(a.ExpectedStateRev, sess.StateRev)
	}
	latest, err := st.runs.st.GetRun(ctx, sess.LatestRunID)
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
	memory, err := st.memory(ctx, a.Version, k)
	if err != nil {
		return store.Run{}, err
	}
	dir, err := st.runs.NewInputDir()
	if err != nil {
		return store.Run{}, err
	}
	if _, err = st.sessions.Inject(ctx, k, dir); err == nil {
		err = os.WriteFile(filepath.Join(dir, "action.json"), b, 0o444)
	}
	if err != nil {
		os.RemoveAll(dir)
		return store.Run{}, err
	}
	expected := a.ExpectedStateRev
	rn, err := st.runs.Submit(ctx, Request{Tool: a.Tool, Version: a.Version, User: a.User, Context: a.Context, Kind: "action",
		ActionID: a.ActionID, InputDir: dir, Action: &act, Memory: memory, WallTime: a.WallTime,
		AfterSuccess: func(ctx context.Context, runID string, res contract.Result) (*int64, error) {
			ok, err := st.sessions.Advance(ctx, k, expected, res.State, runID)
			if err != nil || !ok {
				return nil, err
			}
			rev := expected + 1
			return &rev, nil
		}})
	if err != nil {
		os.RemoveAll(dir)
	}
	return rn, err
}

// countedFiles are the files an initial run's file field is checked against, and
// whether a run that sends none gets the session's kept files. A run that sends files is
// checked with those. One that sends none gets the kept files when its version has no
// input_schema (as before schemas), or when they fit its file field: their number within
// min..max and each of a type it accepts, so a user who changes only the typed inputs
// need not upload the same files again. Kept files that do not fit (from an older
// version, say) are left out, not held against the user, and a version without a file
// field gets none.
func (st *Steps) countedFiles(ctx context.Context, schema contract.InputSchema, k store.SessionKey, sent []string) ([]string, bool, error) {
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

// memory is the run's /work/memory.json (SPEC §5b): {"settings": {...}}, what the user
// saved for the tool that still fits version v's settings_schema, field by field; the
// editor's own settings in a sandbox context; {} when there are none.
func (st *Steps) memory(ctx context.Context, v store.ToolVersion, k store.SessionKey) ([]byte, error) {
	schema, err := contract.ParseSettingsSchema(v.SettingsSchema)
	if err != nil || schema == nil {
		return []byte("{}"), err
	}
	scope := "" // production, whatever the session's context
	if strings.HasPrefix(k.Context, "sandbox:") {
		scope = k.Context
	}
	saved, err := st.runs.st.Settings(ctx, k.UserID, k.ToolID, scope)
	if errors.Is(err, store.ErrNotFound) {
		return []byte("{}"), nil
	}
	if err != nil {
		return nil, err
	}
	var values map[string]any
	if err := json.Unmarshal(saved.Values, &values); err != nil {
		return nil, fmt.Errorf("the saved settings of user %s for tool %s: %w", k.UserID, k.ToolID, err)
	}
	kept := contract.KeepValidSettings(schema, values)
	if len(kept) == 0 {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]any{"settings": kept})
}

// Owned returns run id if u started it or is an admin; anyone else is answered as if it
// did not exist.
func (st *Steps) Owned(ctx context.Context, u store.User, id string) (store.Run, error) {
	rn, err := st.runs.st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && rn.UserID != u.ID && u.Role != store.RoleAdmin) {
		return store.Run{}, errs.New(ErrNotFound, map[string]any{"run": id}, "no run %q", id)
	}
	return rn, err
}

// Offered returns the next action id that run r offered, or an ErrUnknownAction naming
// the ones it did offer.
func Offered(r store.Run, id string) (contract.NextAction, error) {
	var offered []contract.NextAction
	json.Unmarshal([]byte(r.NextActions), &offered)
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
	return r.Kind == "action" && r.Status == store.StatusSucceeded && r.StateRev == nil
}

// Conflict is the error for a submission made at revision expected when the session is
// at current.
func Conflict(expected, current int64) error {
	return errs.New(session.ErrConflict, map[string]any{"expected": expected, "current": current},
		"This session changed in another tab or window (it is at revision %d, not %d). Reload to continue.", current, expected)
}
