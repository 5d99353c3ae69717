package web

import (
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/store"
)

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1: "1 byte", 999: "999 bytes", 1000: "1 kB", 12_345_678: "12.3 MB",
		200_000: "200 kB", 999_999: "1 MB", 20_000_000: "20 MB", 1_500_000_000: "1.5 GB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q; want %q", n, got, want)
		}
	}
}

func TestAgoAndUntil(t *testing.T) {
	c, err := loadCatalogue(assets)
	if err != nil {
		t.Fatal(err)
	}
	en := c.lang("en")
	Ago, Until := en.Ago, en.Until
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{10 * time.Second: "just now", time.Minute: "a minute ago", 3 * time.Minute: "3 minutes ago",
		time.Hour: "an hour ago", 5 * time.Hour: "5 hours ago", 30 * time.Hour: "yesterday", 4 * 24 * time.Hour: "4 days ago"} {
		if got := Ago(now.Add(-d), now); got != want {
			t.Errorf("Ago(-%v) = %q; want %q", d, got, want)
		}
	}
	if got := Until(now.Add(23*time.Hour+50*time.Minute), now); got != "in 24 hours" {
		t.Errorf("Until(23h50m) = %q", got)
	}
	if got := Until(now.Add(3*time.Minute), now); got != "in 3 minutes" {
		t.Errorf("Until(3m) = %q", got)
	}
}

func TestMarkdownIsSanitised(t *testing.T) {
	html := string(renderMarkdown("# Rubrik\n\n**fet** <script>alert(1)</script> <img src=x onerror=alert(2)> [l](javascript:alert(3))\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"))
	for _, bad := range []string{"<script", "onerror", "javascript:"} {
		if strings.Contains(html, bad) {
			t.Errorf("rendered markdown keeps %q:\n%s", bad, html)
		}
	}
	for _, good := range []string{"<h2", "<strong>fet</strong>", "<table>"} {
		if !strings.Contains(html, good) {
			t.Errorf("rendered markdown lacks %q:\n%s", good, html)
		}
	}
}

func TestFormInput(t *testing.T) {
	a := contract.NextAction{ActionID: "go", Fields: []contract.Field{
		{Name: "s", Label: "S", Kind: contract.FieldString}, {Name: "n", Label: "N", Kind: contract.FieldInteger},
		{Name: "x", Label: "X", Kind: contract.FieldNumber}, {Name: "b", Label: "B", Kind: contract.FieldBoolean},
		{Name: "e", Label: "E", Kind: contract.FieldEnum}, {Name: "m", Label: "M", Kind: contract.FieldMultiEnum},
	}}
	in, err := formInput(a, map[string][]string{"in.s": {"hej"}, "in.n": {" 3 "}, "in.x": {"2,5"}, "in.e": {""}, "in.m": {"a", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if in["s"] != "hej" || in["n"] != int64(3) || in["x"] != 2.5 || in["b"] != false {
		t.Fatalf("input = %#v", in)
	}
	if _, ok := in["e"]; ok {
		t.Fatalf("an empty enum was sent: %#v", in)
	}
	if m := in["m"].([]any); len(m) != 2 || m[0] != "a" || m[1] != "c" {
		t.Fatalf("multi_enum = %#v", in["m"])
	}
	if err := contract.ValidateInput(contract.NextAction{Fields: a.Fields[:4]}, map[string]any{"s": in["s"], "n": in["n"], "x": in["x"], "b": in["b"]}); err != nil {
		t.Fatalf("the form's input does not pass the contract's check: %v", err)
	}
	if _, err := formInput(a, map[string][]string{"in.n": {"tre"}}); err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Fatalf("a word for an integer gave %v", err)
	}
	// A box with no value sends "on"; a value that is no boolean is not read as false.
	if in, _ := formInput(a, map[string][]string{"in.b": {"on"}}); in["b"] != true {
		t.Fatalf(`"on" for a boolean gave %#v`, in["b"])
	}
	in, _ = formInput(a, map[string][]string{"in.b": {"maybe"}})
	if err := contract.ValidateInput(contract.NextAction{Fields: a.Fields[3:4]}, map[string]any{"b": in["b"]}); err == nil || !strings.Contains(err.Error(), `"b" (boolean)`) {
		t.Fatalf(`"maybe" for a boolean: %#v, check %v`, in["b"], err)
	}
}

func TestOutputsForThePage(t *testing.T) {
	outs := outputs(store.Run{Outputs: `[{"kind":"table","columns":[{"key":"a","label":"A"},{"key":"b","label":"B"}],"rows":[{"a":"x","b":12345678901234567890},{"a":null,"b":true}]},
		{"kind":"json","value":{"k":[1,2]}},{"kind":"vega_lite","spec":{"mark":"bar"}},{"kind":"html_sandboxed","html":"<p>hi</p>"}]`})
	if len(outs) != 4 {
		t.Fatalf("got %d outputs", len(outs))
	}
	if got := outs[0].Rows; got[0][1] != "12345678901234567890" || got[1][0] != "" || got[1][1] != "true" {
		t.Fatalf("table cells = %q", got)
	}
	if !strings.Contains(outs[1].JSON, "\n") || !strings.Contains(outs[2].JSON, `"mark": "bar"`) {
		t.Fatalf("json not indented: %q / %q", outs[1].JSON, outs[2].JSON)
	}
	if outs[3].Index != 3 {
		t.Fatalf("html output index = %d", outs[3].Index)
	}
}
