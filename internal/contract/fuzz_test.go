package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/errs"
)

// FuzzParseResult checks that ParseResult never panics, that what it accepts keeps to
// the contract and the policy, and that parsing its own result again changes nothing.
func FuzzParseResult(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p := DefaultPolicy()
		res, err := ParseResult(data, p)
		if err != nil {
			if !errors.Is(err, ErrViolation) {
				t.Fatalf("error %v does not wrap ErrViolation", err)
			}
			return
		}
		checkResult(t, res, p)

		again, err := json.Marshal(encodeResult(res))
		if err != nil {
			t.Fatalf("the parsed result does not encode: %v", err)
		}
		res2, err := ParseResult(again, p)
		if err != nil {
			t.Fatalf("the parsed result does not parse again: %v\n%s", err, again)
		}
		if len(res2.Notices) != 0 {
			t.Fatalf("parsing again added notices: %+v\n%s", res2.Notices, again)
		}
		b1, _ := json.Marshal(encodeResult(res))
		b2, _ := json.Marshal(encodeResult(res2))
		if !bytes.Equal(b1, b2) {
			t.Fatalf("parsing again changed the result:\n%s\n%s", b1, b2)
		}
	})
}

// encodeResult is res as result.json.
func encodeResult(res Result) map[string]any {
	m := map[string]any{"contract_version": Version, "status": res.Status, "error_summary": res.ErrorSummary,
		"outputs": res.Outputs, "next_actions": res.NextActions, "artifacts": res.Artifacts}
	if res.State != nil {
		m["state"] = res.State
	}
	return m
}

func checkResult(t *testing.T, res Result, p Policy) {
	t.Helper()
	if res.Status != StatusSucceeded && res.Status != StatusFailed {
		t.Fatalf("status %q", res.Status)
	}
	if len(res.Outputs) > p.MaxOutputs {
		t.Fatalf("%d outputs, over %d", len(res.Outputs), p.MaxOutputs)
	}
	for i, o := range res.Outputs {
		if !knownKind(o.Kind) {
			t.Fatalf("output %d has kind %q", i, o.Kind)
		}
		if why := checkOutput(o, p); why != "" {
			t.Fatalf("output %d over the policy: %s", i, why)
		}
	}
	for _, n := range res.Notices {
		if n.Kind != KindNotice || n.Level != LevelWarning || !slices.ContainsFunc(res.Outputs, func(o Output) bool { return o.Message == n.Message }) {
			t.Fatalf("notice %+v is not a warning among the outputs", n)
		}
	}
	if len(res.NextActions) > p.MaxNextActions {
		t.Fatalf("%d next actions, over %d", len(res.NextActions), p.MaxNextActions)
	}
	ids := map[string]bool{}
	for _, a := range res.NextActions {
		if why := checkAction(a, p); why != "" || ids[a.ActionID] {
			t.Fatalf("next action %+v kept: %s (duplicate %v)", a, why, ids[a.ActionID])
		}
		ids[a.ActionID] = true
		if len(a.Fields) > p.MaxFields {
			t.Fatalf("%d fields", len(a.Fields))
		}
		if err := ValidateInput(a, a.Prefill); err != nil {
			t.Fatalf("prefill kept: %v", err)
		}
	}
	if res.State != nil {
		if len(res.State) > p.MaxStateBytes || !json.Valid(res.State) || (res.State[0] != '{' && string(res.State) != "null") {
			t.Fatalf("state kept: %.100s", res.State)
		}
	}
	for _, a := range res.Artifacts {
		if !validArtifact(a) {
			t.Fatalf("artifact %q kept", a)
		}
	}
}

// FuzzValidateInput checks that ValidateInput never panics, fails only with an
// ErrInvalidInput error, gives the same verdict for numbers as float64 and as
// json.Number, and accepts only keys that are fields.
func FuzzValidateInput(f *testing.F) {
	f.Fuzz(func(t *testing.T, action, input []byte) {
		var a NextAction
		if json.Unmarshal(action, &a) != nil {
			return
		}
		var in map[string]any
		if decodeJSON(input, &in) != nil {
			return
		}
		err := ValidateInput(a, in)
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalidInput) || !strings.HasPrefix(e.Message, "input field ") {
				t.Fatalf("error %#v", err)
			}
		} else {
			for k := range in {
				if !slices.ContainsFunc(a.Fields, func(f Field) bool { return f.Name == k }) {
					t.Fatalf("key %q accepted, fields %+v", k, a.Fields)
				}
			}
		}
		var floats map[string]any
		if json.Unmarshal(input, &floats) == nil {
			if err2 := ValidateInput(a, floats); (err2 == nil) != (err == nil) {
				t.Fatalf("json.Number gives %v, float64 gives %v", err, err2)
			}
		}
	})
}
