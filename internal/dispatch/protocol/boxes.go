package protocol

import (
	"errors"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runner"
)

// Agent sandboxes in a cluster live on workers: an API node sends each operation on a
// box to its worker's BoxSubject(worker, op), and file bodies go through the work
// bucket (XferKey).

// The operations a worker serves on BoxSubject(worker, op).
const (
	OpCreate = "create" // BoxRequest.Spec → {}
	OpExec   = "exec"   // BoxRequest.Exec → Result, with Line replies first when asked
	OpWrite  = "write"  // BoxRequest.Path and Xfer → Size; the worker deletes Xfer
	OpRead   = "read"   // BoxRequest.Path → Xfer and Size; the API node deletes Xfer
	OpRemove = "remove" // → {}, or Busy when IfIdle and an operation is under way
	OpBoxes  = "boxes"  // → Boxes
	OpCancel = "cancel" // BoxRequest.Call: stop that call (no answer)
)

// BoxRequest is one operation on a worker's box.
type BoxRequest struct {
	Call   string          `json:"call"` // this call's id, for OpCancel
	Box    string          `json:"box,omitempty"`
	Spec   *runner.BoxSpec `json:"spec,omitempty"`
	Exec   *BoxExec        `json:"exec,omitempty"`
	Path   string          `json:"path,omitempty"`
	Xfer   string          `json:"xfer,omitempty"`
	IfIdle bool            `json:"if_idle,omitempty"`
}

// BoxExec is one command to run in a box.
type BoxExec struct {
	Cmd      []string      `json:"cmd"`
	Stdin    []byte        `json:"stdin,omitempty"`
	Timeout  time.Duration `json:"timeout"`
	LogBytes int64         `json:"log_bytes"`
	Lines    bool          `json:"lines,omitempty"` // send output lines as they come
}

// BoxReply answers a BoxRequest. An exec that streams sends Line replies before its
// last one.
type BoxReply struct {
	Line   *Line              `json:"line,omitempty"`
	Error  *BoxError          `json:"error,omitempty"`
	Result *runner.ExecResult `json:"result,omitempty"`
	Size   int64              `json:"size,omitempty"`
	Xfer   string             `json:"xfer,omitempty"`
	Busy   bool               `json:"busy,omitempty"`
	Boxes  []string           `json:"boxes,omitempty"`
}

// BoxError is a failed operation: Kind names one of the runner's sandbox errors (then
// Message is for the client), or is empty (then Message is for the log only).
type BoxError struct {
	Kind    string         `json:"kind,omitempty"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// KindBudget names ErrBudget in a BoxError.
const KindBudget = "budget"

// ErrBudget is a worker refusing a new box that does not fit in its memory budget
// beside the others; the API node hands it on as sandbox.ErrBudget.
var ErrBudget = errors.New("the worker's sandbox memory budget is exceeded")

// boxKinds are the errors a worker names to an API node: the runner's, and a budget a
// new box does not fit in.
var boxKinds = map[string]error{
	"path": runner.ErrPath, "no_file": runner.ErrNoFile, "no_space": runner.ErrNoSpace,
	"no_box": runner.ErrNoBox, "no_sandboxes": runner.ErrNoSandboxes, KindBudget: ErrBudget,
}

// BoxErrorOf is how a worker reports err.
func BoxErrorOf(err error) *BoxError {
	be := &BoxError{Message: err.Error()}
	for kind, sentinel := range boxKinds {
		if errors.Is(err, sentinel) {
			be.Kind = kind
		}
	}
	var e *errs.Error
	if errors.As(err, &e) {
		be.Details = e.Details
	}
	return be
}

// Sentinel is the error e's Kind names, or nil when it names none: then its Message is
// for the log only.
func (e *BoxError) Sentinel() error { return boxKinds[e.Kind] }
