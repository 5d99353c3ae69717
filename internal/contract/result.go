package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Statuses a result.json may carry.
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Where a failed result's error came from, as result.json's error_source says: the
// tool's own message to its user (a ToolUserError), an uncaught exception, or the
// tool's refusal of what the user gave in one field (a ToolUserError with field=, whose
// name error_field carries). The shim writes it; a failed result without it (a tool
// that writes result.json itself, in the original's format) is the tool's own message.
const (
	SourceTool  = "tool"
	SourceCrash = "crash"
	SourceInput = "input"
)

// MaxFieldBytes is the longest error_field a result may name.
const MaxFieldBytes = 200

// Policy is the size policy of docs/spec.md §5. A result over MaxResultBytes fails the run.
// Markdown, html and tables over their limits are cut to size, as the original hub's
// normalizer cuts them; any other output over a limit is dropped, and a notice says so.
type Policy struct {
	// Kinds are the output kinds a tool may use, as the original hub's policy profiles
	// list them; an output of another kind is dropped with a notice.
	Kinds             []string
	MaxOutputs        int   // the tool's outputs per result; skrip's notices come on top
	MaxNextActions    int   // next_actions per result
	MaxFields         int   // fields per next action
	MaxStateBytes     int   // state, as compact JSON with sorted keys
	MaxMarkdownBytes  int   // a markdown output's text
	MaxHTMLBytes      int   // an html_sandboxed output's html
	MaxJSONBytes      int   // a json output's value, as compact JSON
	MaxVegaBytes      int   // a vega_lite output's spec, as compact JSON
	MaxTableRows      int   // rows per table output
	MaxTableColumns   int   // columns per table output
	MaxTableCellBytes int   // a table cell's text
	MaxResultBytes    int64 // result.json itself
}

// DefaultPolicy returns the limits of docs/spec.md §5: the original hub's "default"
// profile, with vega_lite allowed besides (skrip draws charts; the original blocks them).
func DefaultPolicy() Policy {
	return Policy{
		Kinds:             []string{KindNotice, KindMarkdown, KindTable, KindJSON, KindHTML, KindVegaLite},
		MaxOutputs:        50,
		MaxNextActions:    10,
		MaxFields:         25,
		MaxStateBytes:     64 << 10,
		MaxMarkdownBytes:  64 << 10,
		MaxHTMLBytes:      96 << 10,
		MaxJSONBytes:      96 << 10,
		MaxVegaBytes:      256 << 10,
		MaxTableRows:      750,
		MaxTableColumns:   40,
		MaxTableCellBytes: 512,
		MaxResultBytes:    8 << 20,
	}
}

// Result is a result.json that keeps to the contract and the size policy.
type Result struct {
	Status       string // StatusSucceeded or StatusFailed
	ErrorSummary string
	ErrorSource  string // on a failed result, SourceTool, SourceCrash or SourceInput; "" on a succeeded one
	ErrorField   string // with SourceInput, the field whose value the tool refused
	// Outputs are the tool's outputs, markdown, html and tables over their limits cut to
	// size and each other one over the policy replaced in place by a warning notice, then
	// the notices about cuts, next_actions, state and artifacts.
	Outputs     []Output
	NextActions []NextAction
	// State is the state as compact JSON (re-encoded: valid UTF-8, keys sorted); nil
	// when the key was absent or the state was dropped, "null" when explicitly null.
	State json.RawMessage
	// Artifacts are the paths the shim listed ("output/<path>"), for information: the
	// runner scans output/ itself.
	Artifacts []string
	// Notices are the notices ParseResult added to Outputs, so callers can log them.
	Notices []Output
}

// ParseResult reads result.json. Data over p.MaxResultBytes, bad JSON, a contract_version
// other than Version, a status other than succeeded or failed, a shim-written field
// (error_summary, error_source, artifacts) of the wrong type or value, or a vega_lite output whose spec is not
// an object (the original hub's schema refuses the whole result for it) give an error
// wrapping ErrViolation. Artifacts may be listed as paths or, as the original's runner
// writes them, as {"path", "bytes"} objects.
//
// Then the size policy, as the original hub's normalizer applies it: markdown and html
// over their limits are cut (at a character boundary), tables to their rows, columns and
// cell limits, each kind with one notice in Swedish, as the original's. An output over
// another limit, of a kind p does not allow or malformed, and a malformed next action
// (or one with too many fields, or a duplicate action_id) are each dropped and replaced
// by a warning notice that says what was dropped and names the limit. A state over
// MaxStateBytes keeps the most of its keys, in sorted order, that fit (the original's
// rule), with a notice; a state that is not an object or null is dropped. A prefill that
// does not fit its action's fields drops only the prefill (null entries in it are
// removed first). Next actions past MaxNextActions are dropped with one notice. The
// tool's outputs past MaxOutputs are dropped with one notice; skrip's notices come on
// top of the MaxOutputs, so a tool never loses an output to them.
func ParseResult(data []byte, p Policy) (Result, error) {
	if int64(len(data)) > p.MaxResultBytes {
		return Result{}, violation("result.json is %d bytes, over the limit of %s", len(data), bytesLimit(p.MaxResultBytes))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Result{}, violation("result.json is empty: the run ended before the shim wrote its result")
	}
	var top map[string]json.RawMessage
	if err := decodeJSON(data, &top); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Result{}, violation("result.json is a JSON %s, not an object", listName(te.Value))
		}
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return Result{}, violation("result.json is not valid JSON: something is missing or out of place at byte %d", syntax.Offset)
		}
		return Result{}, violation("result.json is not valid JSON")
	}
	if top == nil {
		return Result{}, violation("result.json is null, not an object")
	}

	v, ok := top["contract_version"]
	n, isNum := value(v).(json.Number)
	if f, err := strconv.ParseFloat(string(n), 64); !ok || !isNum || err != nil || f != Version {
		return Result{}, violation("contract_version is %s, want %d", describe(v, ok), Version)
	}
	v, ok = top["status"]
	status, _ := value(v).(string)
	if status != StatusSucceeded && status != StatusFailed {
		return Result{}, violation("status is %s, want %q or %q", describe(v, ok), StatusSucceeded, StatusFailed)
	}
	var summary string
	switch s := value(top["error_summary"]).(type) {
	case nil:
	case string:
		summary = s
	default:
		return Result{}, violation("error_summary is a JSON %s, want a string", jsonType(s))
	}
	var source string
	switch s := value(top["error_source"]).(type) {
	case nil:
		source = SourceTool
	case string:
		if s != SourceTool && s != SourceCrash && s != SourceInput {
			return Result{}, violation("error_source is %s, want %q, %q or %q", quote(s), SourceTool, SourceCrash, SourceInput)
		}
		source = s
	default:
		return Result{}, violation("error_source is a JSON %s, want a string", jsonType(s))
	}
	var field string
	switch f := value(top["error_field"]).(type) {
	case nil:
	case string:
		if len(f) > MaxFieldBytes || !utf8.ValidString(f) {
			return Result{}, violation("error_field is longer than %d bytes or not UTF-8", MaxFieldBytes)
		}
		field = f
	default:
		return Result{}, violation("error_field is a JSON %s, want a string", jsonType(f))
	}
	if source == SourceInput && field == "" {
		// A refusal that names no field is the tool's own message.
		source = SourceTool
	}
	if status != StatusFailed {
		source = ""
	}
	if source != SourceInput {
		field = ""
	}
	var artifacts []string
	switch a := value(top["artifacts"]).(type) {
	case nil:
	case []any:
		for _, e := range a {
			// The original's runner lists {"path": "output/<name>", "bytes": n}; a tool
			// that writes result.json itself, as there, may do the same.
			if o, ok := e.(map[string]any); ok {
				e = o["path"]
			}
			s, ok := e.(string)
			if !ok {
				return Result{}, violation("artifacts holds a JSON %s, want only paths or {\"path\", \"bytes\"} objects", jsonType(e))
			}
			artifacts = append(artifacts, s)
		}
	default:
		return Result{}, violation("artifacts is a JSON %s, want a list of paths", jsonType(a))
	}

	outs, notices, err := parseOutputs(top["outputs"], p)
	if err != nil {
		return Result{}, err
	}
	res := Result{Status: status, ErrorSummary: summary, ErrorSource: source, ErrorField: field}
	extra := notices.cut
	res.NextActions, extra = parseNextActions(top["next_actions"], p, extra)
	res.State, extra = parseState(top, p, extra)
	res.Artifacts, extra = checkArtifacts(artifacts, extra)
	res.Outputs = append(outs, extra...)
	res.Notices = append(notices.dropped, extra...)
	return res, nil
}

func violation(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrViolation, fmt.Sprintf(format, args...))
}

func dropped(format string, args ...any) Output {
	return Notice(LevelWarning, format, args...)
}

// outputNotices are the notices of parseOutputs: those that replaced dropped outputs in
// place (and the one about outputs past the limit), and those about outputs cut to size,
// which come after the tool's outputs.
type outputNotices struct {
	dropped, cut []Output
}

// parseOutputs checks the tool's outputs, keeping at most p.MaxOutputs of them.
func parseOutputs(raw json.RawMessage, p Policy) ([]Output, outputNotices, error) {
	var ns outputNotices
	if isNull(raw) {
		return nil, ns, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		n := dropped("The result's outputs were dropped: they are a JSON %s, not a list.", jsonType(value(raw)))
		ns.dropped = []Output{n}
		return []Output{n}, ns, nil
	}
	var overflow []Output
	if len(raws) > p.MaxOutputs {
		overflow = []Output{dropped("Outputs %d to %d of %d were dropped: over the limit of %d outputs per result.",
			p.MaxOutputs+1, len(raws), len(raws), p.MaxOutputs)}
		raws = raws[:max(p.MaxOutputs, 0)]
	}
	var outs []Output
	var cuts cutCounts
	for i, r := range raws {
		var o Output
		reason := "it is null"
		if !isNull(r) {
			if err := decodeJSON(r, &o); err != nil {
				reason = decodeReason(err)
				var head kindJSON
				_ = json.Unmarshal(r, &head) // only to name the kind in the notice
				o.Kind = head.Kind
			} else if _, isObject := o.Spec.(map[string]any); o.Kind == KindVegaLite && !isObject {
				return nil, ns, violation("output %d (vega_lite): its spec is a JSON %s, not an object", i+1, jsonType(o.Spec))
			} else {
				o.Reason, o.Params = "", nil // skrip's own notices only
				o = cuts.cut(o, p)
				reason = checkOutput(o, p)
			}
		}
		if reason == "" {
			outs = append(outs, o)
			continue
		}
		what := fmt.Sprintf("Output %d", i+1)
		if knownKind(o.Kind) {
			what += " (" + o.Kind + ")"
		}
		n := dropped("%s was dropped: %s.", what, reason)
		outs = append(outs, n)
		ns.dropped = append(ns.dropped, n)
	}
	ns.dropped = append(ns.dropped, overflow...)
	ns.cut = cuts.notices(p)
	return append(outs, overflow...), ns, nil
}

var outputKinds = []string{KindNotice, KindMarkdown, KindTable, KindJSON, KindHTML, KindVegaLite}

func knownKind(k string) bool { return slices.Contains(outputKinds, k) }

// checkOutput returns "" when o keeps to the policy, or why it does not.
func checkOutput(o Output, p Policy) string {
	if knownKind(o.Kind) && !slices.Contains(p.Kinds, o.Kind) {
		return fmt.Sprintf("its kind %s is not allowed by the policy (allowed: %s)", quote(o.Kind), strings.Join(p.Kinds, ", "))
	}
	switch o.Kind {
	case KindNotice:
		if o.Level != LevelInfo && o.Level != LevelWarning && o.Level != LevelError {
			return fmt.Sprintf("its level is %s, want %q, %q or %q", quote(o.Level), LevelInfo, LevelWarning, LevelError)
		}
	case KindMarkdown:
		if len(o.Markdown) > p.MaxMarkdownBytes {
			return overBytes(len(o.Markdown), p.MaxMarkdownBytes, "markdown")
		}
	case KindHTML:
		if len(o.HTML) > p.MaxHTMLBytes {
			return overBytes(len(o.HTML), p.MaxHTMLBytes, "html_sandboxed")
		}
	case KindTable:
		if len(o.Columns) > p.MaxTableColumns {
			return fmt.Sprintf("it has %d columns, over the limit of %d columns per table", len(o.Columns), p.MaxTableColumns)
		}
		if len(o.Rows) > p.MaxTableRows {
			return fmt.Sprintf("it has %d rows, over the limit of %d rows per table", len(o.Rows), p.MaxTableRows)
		}
		keys := map[string]bool{}
		for i, c := range o.Columns {
			if c.Key == "" {
				return fmt.Sprintf("its column %d has no key", i+1)
			}
			if keys[c.Key] {
				return fmt.Sprintf("it has two columns with the key %s", quote(c.Key))
			}
			keys[c.Key] = true
		}
	case KindJSON:
		n, err := jsonSize(o.Value)
		if err != nil {
			return "its value cannot be encoded as JSON"
		}
		if n > p.MaxJSONBytes {
			return overBytes(n, p.MaxJSONBytes, "a json value")
		}
	case KindVegaLite:
		n, err := jsonSize(o.Spec)
		if err != nil {
			return "its spec cannot be encoded as JSON"
		}
		if n > p.MaxVegaBytes {
			return overBytes(n, p.MaxVegaBytes, "a vega_lite spec")
		}
	case "":
		return "it has no kind"
	default:
		return fmt.Sprintf("its kind %s is unknown (known kinds: %s)", quote(o.Kind), strings.Join(outputKinds, ", "))
	}
	return ""
}

// parseState checks the state, re-encoding it compactly.
func parseState(top map[string]json.RawMessage, p Policy, extra []Output) (json.RawMessage, []Output) {
	raw, ok := top["state"]
	if !ok {
		return nil, extra
	}
	v := value(raw)
	switch v.(type) {
	case nil:
		return json.RawMessage("null"), extra
	case map[string]any:
	default:
		return nil, append(extra, dropped("The result's state was dropped: it is a JSON %s; state must be an object or null.", jsonType(v)))
	}
	state, err := compactJSON(v)
	if err != nil {
		return nil, append(extra, dropped("The result's state was dropped: it cannot be encoded as JSON."))
	}
	if len(state) > p.MaxStateBytes {
		kept, left := cutState(v.(map[string]any), p.MaxStateBytes)
		if kept == nil {
			return nil, append(extra, dropped("The result's state was dropped: it cannot be encoded as JSON."))
		}
		return kept, append(extra, systemNotice("State kortades för att rymmas inom %d byte (%d nycklar togs bort).", p.MaxStateBytes, left))
	}
	return json.RawMessage(state), extra
}

// checkArtifacts keeps the paths that are plain relative paths under output/.
func checkArtifacts(paths []string, extra []Output) ([]string, []Output) {
	var ok []string
	var bad []string
	for _, a := range paths {
		if validArtifact(a) {
			ok = append(ok, a)
		} else {
			bad = append(bad, a)
		}
	}
	if len(bad) > 0 {
		extra = append(extra, dropped("%d artifact paths listed in the result were ignored: they are not plain paths under output/ (the first is %s).", len(bad), quote(bad[0])))
	}
	return ok, extra
}

func validArtifact(a string) bool {
	rel, ok := strings.CutPrefix(a, "output/")
	if !ok || rel == "" || strings.ContainsRune(rel, 0) || path.Clean(rel) != rel || path.IsAbs(rel) {
		return false
	}
	for _, el := range strings.Split(rel, "/") {
		if el == ".." || el == "." {
			return false
		}
	}
	return true
}

// isNull reports whether a raw value is absent or null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// value decodes a raw JSON value known to be valid; nil for absent or null.
func value(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	var v any
	if err := decodeJSON(raw, &v); err != nil {
		return nil
	}
	return v
}

// describe shows a raw value for a violation message.
func describe(raw json.RawMessage, present bool) string {
	if !present {
		return "missing"
	}
	return short(string(raw))
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	default:
		return "object"
	}
}

// decodeReason says why a JSON value did not decode into an output or action.
func decodeReason(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return "it is not valid JSON"
	}
	got := listName(te.Value)
	if te.Field == "" {
		return fmt.Sprintf("it is a JSON %s, not an object", got)
	}
	want := "a " + te.Type.Kind().String()
	switch te.Type.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.Map, reflect.Struct:
		want = "an object"
	case reflect.Bool:
		want = "a boolean"
	}
	return fmt.Sprintf("its %s is a JSON %s, want %s", te.Field, got, want)
}

// listName calls a JSON array a list, as the contract does.
func listName(jsonType string) string {
	if jsonType == "array" {
		return "list"
	}
	return jsonType
}

func overBytes(n, limit int, what string) string {
	return fmt.Sprintf("it is %d bytes, over the limit of %s for %s", n, bytesLimit(int64(limit)), what)
}

// bytesLimit shows a limit in bytes, with KiB or MiB when it is a whole number of them.
func bytesLimit(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
