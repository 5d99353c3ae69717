package wire

// LintRequest is the body of POST /api/v1/editor/lint: the source to check.
type LintRequest struct {
	Source *string `json:"source"`
}

// Diagnostic is one finding of the linter: Line and Column count from 1 (Column 0: not
// known); Severity is "error" or "warning".
type Diagnostic struct {
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
}

// LintResult is the answer of POST /api/v1/editor/lint; Diagnostics is [] for clean code.
type LintResult struct {
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// HintFunction is a helper module's function with its help text from the author's
// guide.
type HintFunction struct {
	Module    string `json:"module"`
	Name      string `json:"name"`
	Signature string `json:"signature"`
	Help      string `json:"help"`
}

// Hints is the answer of GET /api/v1/editor/hints: what the editor completes and
// explains. Modules are the runtime's importable top-level modules; ModulesFromRuntime
// is false when the runtime has no list of them (then Modules holds the helper modules
// only).
type Hints struct {
	Modules            []string       `json:"modules"`
	ModulesFromRuntime bool           `json:"modules_from_runtime"`
	Functions          []HintFunction `json:"functions"`
}
