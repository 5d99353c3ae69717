package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// schemaFormState is what a test reads of a page's schema form in one evaluation.
type schemaFormState struct {
	JSON        string   // the input_schema box
	Names       []string // the name controls of the form, in order
	Kinds       []string // their kinds
	Problems    string   // the problems listed, "" when none are
	Invalid     []string // ids of the form's controls marked invalid
	Active      string   // the focused element's id
	Stale       bool     // the form says the JSON box cannot be read
	ScrollWidth int
}

const schemaFormJS = `(() => {
	const f = document.querySelector("[data-schema-form=input]");
	if (!f) return null;
	const probs = f.querySelector(".schema-problems");
	return {
		JSON: document.querySelector("#input-schema").value,
		Names: [...f.querySelectorAll("input[data-prop=name]")].map((e) => e.value),
		Kinds: [...f.querySelectorAll("select[data-prop=kind]")].map((e) => e.value),
		Problems: probs && !probs.hidden ? probs.textContent : "",
		Invalid: [...f.querySelectorAll("[aria-invalid=true]")].map((e) => e.id),
		Active: document.activeElement ? document.activeElement.id : "",
		Stale: !f.querySelector(".field-error").hidden,
		ScrollWidth: document.documentElement.scrollWidth,
	};
})()`

func readSchemaForm(t *testing.T, ctx context.Context) schemaFormState {
	t.Helper()
	var st *schemaFormState
	run(t, ctx, chromedp.WaitReady("[data-schema-form=input]", chromedp.ByQuery), chromedp.Evaluate(schemaFormJS, &st))
	if st == nil {
		t.Fatal("the page has no schema form")
	}
	return *st
}

// waitSchemaForm reads the schema form until ok holds, or fails.
func waitSchemaForm(t *testing.T, ctx context.Context, what string, ok func(schemaFormState) bool) schemaFormState {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var st *schemaFormState
		if chromedp.Run(ctx, chromedp.Evaluate(schemaFormJS, &st)) == nil && st != nil && ok(*st) {
			return *st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the schema form never showed it: %+v", what, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setKind chooses kind in the kind list of field i, as a user's choice does (a change event).
func setKind(i int, kind string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => {
		const s = document.getElementById("input-schema-f%d-kind");
		s.focus(); s.value = %q; s.dispatchEvent(new Event("change", {bubbles: true})); return true;
	})()`, i, kind), new(bool))
}

// typeIn types text into the control id, replacing what it holds, with the keyboard.
func typeIn(id, text string) chromedp.Action {
	return chromedp.Tasks{
		chromedp.Evaluate(fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.focus(); e.select(); return true; })()`, id), new(bool)),
		chromedp.SendKeys("#"+id, text, chromedp.ByQuery),
	}
}

// schemaField is a field of the JSON box as the test reads it.
type schemaField struct {
	Name, Label, Kind string
	Options           []struct{ Value, Label string }
	Accept            []string
	Min, Max          *int
}

func parseSchema(t *testing.T, s string) []schemaField {
	t.Helper()
	var fields []schemaField
	if err := json.Unmarshal([]byte(s), &fields); err != nil {
		t.Fatalf("the JSON box holds no schema: %v\n%s", err, s)
	}
	return fields
}

// TestBrowserWorkbenchSchema: an author builds a schema with the editor's form (a text
// field, a list with options, a number, a file slot moved first with the keyboard), the
// JSON follows; the JSON edited by hand, the form follows; a name used twice is listed
// as a problem before saving; the saved schema is the tool page's form, in that order.
// The new-tool form has the same code box and schema form. At 1280 and 390 px, in Swedish.
func TestBrowserWorkbenchSchema(t *testing.T) {
	s := startSite(t)
	defer s.close()
	author := s.userClient(t, "author")
	base := s.as(t, "author")
	s.useLang(t, base, "sv")
	bg := context.Background()

	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			slug := "schema-" + vp.name
			if _, _, err := author.CreateTool(bg, slug, "Schema "+vp.name, "", printSource, false); err != nil {
				t.Fatal(err)
			}
			ctx := s.tab(t, base)
			run(t, ctx, chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/editor/"+slug))
			st := readSchemaForm(t, ctx)
			if len(st.Names) != 0 || st.JSON != "" {
				t.Fatalf("a version without a schema shows fields: %+v", st)
			}

			// A text field.
			run(t, ctx, chromedp.Click("#input-schema-fadd", chromedp.ByQuery))
			if st = readSchemaForm(t, ctx); st.Active != "input-schema-f0-name" {
				t.Fatalf("after adding a field the focus is on %q, not its name", st.Active)
			}
			run(t, ctx, typeIn("input-schema-f0-name", "titel"), typeIn("input-schema-f0-label", "Titel"))
			// A list with two options.
			run(t, ctx, chromedp.Click("#input-schema-fadd", chromedp.ByQuery), setKind(1, "enum"),
				typeIn("input-schema-f1-name", "niva"), typeIn("input-schema-f1-label", "Nivå"),
				typeIn("input-schema-f1-opt0-value", "lag"), typeIn("input-schema-f1-opt0-label", "Låg"),
				chromedp.Click("#input-schema-f1-add-option", chromedp.ByQuery),
				typeIn("input-schema-f1-opt1-value", "hog"), typeIn("input-schema-f1-opt1-label", "Hög"))
			// A number.
			run(t, ctx, chromedp.Click("#input-schema-fadd", chromedp.ByQuery), setKind(2, "number"),
				typeIn("input-schema-f2-name", "vikt"), typeIn("input-schema-f2-label", "Vikt"))
			// A file slot with its accept, min and max.
			run(t, ctx, chromedp.Click("#input-schema-fadd", chromedp.ByQuery), setKind(3, "file"),
				typeIn("input-schema-f3-name", "bilaga"), typeIn("input-schema-f3-label", "Bilaga"),
				typeIn("input-schema-f3-accept", ".csv, .txt"), typeIn("input-schema-f3-min", "1"), typeIn("input-schema-f3-max", "2"))
			st = readSchemaForm(t, ctx)
			if st.Problems != "" {
				t.Fatalf("a good schema lists problems: %q", st.Problems)
			}
			// Moved first: a click, then Enter twice on the button the focus stays on.
			run(t, ctx, chromedp.Click("#input-schema-f3-up", chromedp.ByQuery))
			if st = readSchemaForm(t, ctx); st.Active != "input-schema-f2-up" {
				t.Fatalf("after moving a field up the focus is on %q", st.Active)
			}
			run(t, ctx, chromedp.KeyEvent(kb.Enter), chromedp.KeyEvent(kb.Enter))
			st = waitSchemaForm(t, ctx, "the file slot first", func(st schemaFormState) bool {
				return slices.Equal(st.Names, []string{"bilaga", "titel", "niva", "vikt"})
			})
			// The JSON followed every step.
			fields := parseSchema(t, st.JSON)
			if len(fields) != 4 || fields[0].Kind != "file" || fields[0].Label != "Bilaga" || !slices.Equal(fields[0].Accept, []string{".csv", ".txt"}) ||
				fields[0].Min == nil || *fields[0].Min != 1 || fields[0].Max == nil || *fields[0].Max != 2 ||
				fields[1].Kind != "string" || fields[1].Label != "Titel" || fields[3].Kind != "number" || fields[3].Name != "vikt" ||
				fields[2].Kind != "enum" || len(fields[2].Options) != 2 || fields[2].Options[1].Value != "hog" || fields[2].Options[1].Label != "Hög" {
				t.Fatalf("the JSON box did not follow the form:\n%s", st.JSON)
			}
			if st.ScrollWidth > int(vp.width) {
				t.Errorf("the editor with the schema form is %d px wide at %d px", st.ScrollWidth, vp.width)
			}

			// The JSON edited by hand: the number renamed to a name in use. The form
			// follows, and lists the problem before anything is saved.
			edited := strings.Replace(st.JSON, `"vikt"`, `"titel"`, 1)
			b, _ := json.Marshal(edited)
			run(t, ctx, chromedp.Evaluate(`(() => { const b = document.querySelector("#input-schema"); b.focus(); b.value = `+string(b)+`;
				b.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, new(bool)))
			st = waitSchemaForm(t, ctx, "the form following the JSON", func(st schemaFormState) bool {
				return slices.Equal(st.Names, []string{"bilaga", "titel", "niva", "titel"})
			})
			st = waitSchemaForm(t, ctx, "the duplicate name listed", func(st schemaFormState) bool { return st.Problems != "" })
			if !strings.Contains(st.Problems, "Fält 4 (”titel”): namnet används redan av fält 2") || !slices.Contains(st.Invalid, "input-schema-f3-name") {
				t.Fatalf("the duplicate name is not listed on the field: %+v", st)
			}
			if st.Active != "input-schema" {
				t.Fatalf("the form took the focus from the JSON box: %q", st.Active)
			}
			// JSON that is no list of fields: the form waits, unchanged, and says why.
			run(t, ctx, chromedp.Evaluate(`(() => { const b = document.querySelector("#input-schema"); b.value += ","; b.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, new(bool)))
			waitSchemaForm(t, ctx, "the form waiting for readable JSON", func(st schemaFormState) bool { return st.Stale && len(st.Names) == 4 })
			run(t, ctx, chromedp.Evaluate(`(() => { const b = document.querySelector("#input-schema"); b.value = b.value.replace(/,$/, ""); b.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, new(bool)))
			waitSchemaForm(t, ctx, "the form back", func(st schemaFormState) bool { return !st.Stale })

			// Corrected in the form: the problem goes, the JSON follows.
			run(t, ctx, typeIn("input-schema-f3-name", "vikt"))
			st = waitSchemaForm(t, ctx, "the problem gone", func(st schemaFormState) bool { return st.Problems == "" })
			if fields = parseSchema(t, st.JSON); fields[3].Name != "vikt" || len(st.Invalid) != 0 {
				t.Fatalf("the JSON did not follow the corrected name: %+v", st)
			}

			// Saved and published: the tool page's form has the fields in that order.
			run(t, ctx, chromedp.Click("form[data-editor-form] button[name=publish]", chromedp.ByQuery))
			waitPath(t, ctx, "/editor/"+slug+"?version=", location(t, ctx))
			var order []string
			var options []string
			run(t, ctx, chromedp.Navigate(s.base+"/tools/"+slug), chromedp.WaitVisible("form[data-upload]", chromedp.ByQuery),
				chromedp.Evaluate(`[...document.querySelectorAll("form[data-upload] input[type=file], form[data-upload] [name^='in.']")].map((e) => e.type === "file" ? "files:" + e.accept : e.name)`, &order),
				chromedp.Evaluate(`[...document.querySelectorAll("select[name='in.niva'] option")].map((o) => o.value).filter(Boolean)`, &options))
			if !slices.Equal(order, []string{"files:.csv,.txt", "in.titel", "in.niva", "in.vikt"}) || !slices.Equal(options, []string{"lag", "hog"}) {
				t.Fatalf("the tool page's form: %v, options %v", order, options)
			}
		})
	}

	for _, vp := range viewports {
		t.Run("new tool "+vp.name, func(t *testing.T) {
			slug := "nytt-" + vp.name
			ctx := s.tab(t, base)
			run(t, ctx, chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/editor"),
				chromedp.WaitReady("form[data-new-tool] .CodeMirror", chromedp.ByQuery))
			var code string
			run(t, ctx, chromedp.Evaluate(`document.querySelector("form[data-new-tool] .CodeMirror").CodeMirror.getValue()`, &code))
			if !strings.Contains(code, "Körs varje gång någon kör verktyget") || !strings.Contains(code, `raise ToolUserError("Ladda upp minst en fil.")`) {
				t.Fatalf("the starter code is not the Swedish one:\n%s", code)
			}
			st := readSchemaForm(t, ctx)
			if len(st.Names) != 0 {
				t.Fatalf("a new tool starts with fields: %+v", st)
			}
			// A field typed as JSON, and at once (before the form follows by itself)
			// another added with the form: the form reads the box first, so both are kept.
			run(t, ctx, typeIn("t-title", "Nytt "+vp.name), typeIn("t-slug", slug),
				chromedp.Evaluate(`(() => { const b = document.querySelector("#input-schema"); b.focus();
					b.value = '[{"name": "namn", "label": "Ditt namn", "kind": "string"}]'; b.dispatchEvent(new Event("input", {bubbles: true})); return true; })()`, new(bool)),
				chromedp.Click("#input-schema-fadd", chromedp.ByQuery), typeIn("input-schema-f1-name", "klass"), typeIn("input-schema-f1-label", "Klass"))
			if st = readSchemaForm(t, ctx); st.ScrollWidth > int(vp.width) {
				t.Errorf("the new-tool form is %d px wide at %d px", st.ScrollWidth, vp.width)
			}
			run(t, ctx, chromedp.Click("form[data-new-tool] button[type=submit]", chromedp.ByQuery))
			waitPath(t, ctx, "/editor/"+slug)
			st = waitSchemaForm(t, ctx, "the new tool's schema", func(st schemaFormState) bool { return len(st.Names) == 2 })
			if fields := parseSchema(t, st.JSON); fields[0].Name != "namn" || fields[0].Label != "Ditt namn" || fields[1].Name != "klass" || fields[1].Kind != "string" {
				t.Fatalf("the new tool's schema: %s", st.JSON)
			}
			run(t, ctx, chromedp.Evaluate(`document.querySelector(".CodeMirror").CodeMirror.getValue()`, &code))
			if !strings.Contains(code, "Körs varje gång") {
				t.Fatalf("the new tool's code is not the starter code:\n%s", code)
			}
		})
	}
}
