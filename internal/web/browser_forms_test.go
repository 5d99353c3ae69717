package web_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// typedForm fills a tool's typed input form (string, text, integer, enum, boolean and
// files with accept) and its settings panel in a real browser, and sees the values arrive
// in the tool; on the way, the browser's courtesy check blocks a wrong file type and too
// many files, and a value the server refuses shows beside its field.
func (s *site) typedForm(t *testing.T) {
	createEcho(t, s.userClient(t, "author"), "gruppera")
	ctx := s.as(t, "teacher")
	// The form's messages are checked in Swedish; the teacher's later pages are the
	// browser's English again.
	s.useLang(t, ctx, "sv")
	defer s.useLang(t, ctx, "en")
	teacher := s.userClient(t, "teacher")
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	csv1, csv2, csv3 := file("elever.csv", "namn\nAda\nBo\n"), file("lärare.CSV", "namn\nCe\n"), file("extra.csv", "x\n")
	txt := file("elever.txt", "Ada, Bo")
	const runButton = "form[data-upload] button[type=submit]"

	// The settings panel: every kind, saved with a Swedish confirmation.
	run(t, ctx,
		chromedp.Navigate(s.base+"/tools/gruppera"),
		chromedp.WaitVisible("#set-signature", chromedp.ByQuery),
		chromedp.SendKeys("#set-signature", "Ada L", chromedp.ByQuery),
		chromedp.SendKeys("#set-per_page", "12", chromedp.ByQuery),
		chromedp.Click("#set-color", chromedp.ByQuery),
		chromedp.SetValue("#set-font", "sans", chromedp.ByQuery),
		chromedp.Click("input[name='set.days'][value=mon]", chromedp.ByQuery),
		chromedp.Click("input[name='set.days'][value=wed]", chromedp.ByQuery),
		chromedp.Click("form[data-settings] button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("[data-saved]", chromedp.ByQuery),
	)
	if got := text(t, ctx, "[data-saved]"); got != "Inställningarna är sparade." {
		t.Fatalf("after saving, the panel says %q", got)
	}
	var saved []bool
	run(t, ctx, chromedp.Evaluate(`[...document.querySelectorAll("input[name='set.days']")].map(e => e.checked)`, &saved))
	if !slices.Equal(saved, []bool{true, false, true}) {
		t.Fatalf("after saving, the days are ticked %v", saved)
	}

	// The courtesy check: a file of the wrong type, or too many, never leaves the
	// browser, and the message stands beside the slot.
	before := countRuns(t, teacher)
	for _, c := range []struct {
		files []string
		want  string
	}{{[]string{txt}, "elever.txt är av en filtyp som verktyget inte tar emot"}, {[]string{csv1, csv2, csv3}, "Välj högst 2 filer; du har valt 3."}} {
		run(t, ctx,
			chromedp.SetUploadFiles("#files", c.files, chromedp.ByQuery),
			chromedp.Click(runButton, chromedp.ByQuery),
			chromedp.WaitVisible("#files-error", chromedp.ByQuery),
		)
		if got := text(t, ctx, "#files-error"); !strings.Contains(got, c.want) {
			t.Fatalf("beside the slot: %q; want %q", got, c.want)
		}
		var invalid, focused string
		run(t, ctx, chromedp.AttributeValue("#files", "aria-invalid", &invalid, nil, chromedp.ByQuery),
			chromedp.Evaluate(`document.activeElement.id`, &focused))
		if invalid != "true" || focused != "files" {
			t.Fatalf("the slot is aria-invalid=%q and the focus is on %q", invalid, focused)
		}
	}
	if !strings.Contains(location(t, ctx), "/tools/gruppera?") || countRuns(t, teacher) != before {
		t.Fatalf("a blocked form left the page or made a run (at %s)", location(t, ctx))
	}

	// A value the browser lets through and the server refuses: its message beside
	// the field, what was typed and chosen kept, nothing run.
	run(t, ctx,
		chromedp.SendKeys("#in-name", "  Ada  ", chromedp.ByQuery),
		chromedp.SendKeys("#in-notes", "Två grupper.", chromedp.ByQuery),
		chromedp.SetValue("#in-size", "99999999999999999999", chromedp.ByQuery),
		chromedp.SetValue("#in-mode", "fair", chromedp.ByQuery),
		chromedp.Click("#in-shuffle", chromedp.ByQuery),
		chromedp.SetUploadFiles("#files", []string{csv1, csv2}, chromedp.ByQuery),
		chromedp.Click(runButton, chromedp.ByQuery),
		chromedp.WaitVisible("#in-size-error", chromedp.ByQuery),
	)
	if got := text(t, ctx, "#in-size-error"); !strings.Contains(got, "size") || !strings.Contains(got, "heltal") {
		t.Fatalf("beside the group size: %q", got)
	}
	var kept struct {
		Name, Mode string
		Shuffle    bool
		Files      int
		Focused    string
		SlotError  bool
	}
	run(t, ctx, chromedp.Evaluate(`({Name: document.querySelector("#in-name").value, Mode: document.querySelector("#in-mode").value,
		Shuffle: document.querySelector("#in-shuffle").checked, Files: document.querySelector("#files").files.length,
		Focused: document.activeElement.id, SlotError: !document.querySelector("#files-error").hidden})`, &kept))
	if kept.Name != "  Ada  " || kept.Mode != "fair" || !kept.Shuffle || kept.Files != 2 || kept.Focused != "in-size" || kept.SlotError {
		t.Fatalf("after the refusal the form holds %+v", kept)
	}
	if countRuns(t, teacher) != before {
		t.Fatal("the refused form made a run")
	}

	// Put it right and run: the values arrive in the tool, normalised, with the settings.
	run(t, ctx,
		chromedp.SetValue("#in-size", "4", chromedp.ByQuery),
		chromedp.Click(runButton, chromedp.ByQuery),
	)
	waitPath(t, ctx, "/runs/")
	run(t, ctx, chromedp.WaitVisible("figure.json pre", chromedp.ByQuery))
	var shown []string
	run(t, ctx, chromedp.Evaluate(`[...document.querySelectorAll("figure.json pre")].map(e => e.textContent)`, &shown))
	if len(shown) != 2 {
		t.Fatalf("the run shows %d JSON outputs: %q", len(shown), shown)
	}
	var inputs, settings map[string]any
	if json.Unmarshal([]byte(shown[0]), &inputs) != nil || json.Unmarshal([]byte(shown[1]), &settings) != nil {
		t.Fatalf("the outputs are not JSON: %q", shown)
	}
	wantIn := map[string]any{"name": "Ada", "notes": "Två grupper.", "size": float64(4), "shuffle": true, "mode": "fair"}
	wantSet := map[string]any{"signature": "Ada L", "per_page": float64(12), "color": true, "font": "sans", "days": []any{"mon", "wed"}}
	if !jsonEqual(inputs, wantIn) || !jsonEqual(settings, wantSet) {
		t.Fatalf("the tool got inputs %v and settings %v; want %v and %v", inputs, settings, wantIn, wantSet)
	}
	if got := text(t, ctx, ".notice"); !strings.Contains(got, "files: elever.csv, lärare.CSV") {
		t.Fatalf("the tool saw %q", got)
	}
}

// schemaCheck: the editor refuses to send a schema that is not JSON, and shows the
// server's refusal of one that is JSON but no schema beside the box.
func (s *site) schemaCheck(t *testing.T) {
	author := s.userClient(t, "author")
	if _, _, err := author.CreateTool(context.Background(), "schema-check", "Schemakoll", "", echoSource, false); err != nil {
		t.Fatal(err)
	}
	ctx := s.as(t, "author")
	s.useLang(t, ctx, "sv")
	defer s.useLang(t, ctx, "en")
	run(t, ctx,
		chromedp.Navigate(s.base+"/editor/schema-check"),
		chromedp.WaitVisible("#input-schema", chromedp.ByQuery),
	)
	page := location(t, ctx)
	run(t, ctx,
		chromedp.SetValue("#input-schema", `[{"name": "a", "label": "A", "kind": "string"},]`, chromedp.ByQuery),
		chromedp.Click("form[data-schemas] button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#input-schema-error", chromedp.ByQuery),
	)
	if got := text(t, ctx, "#input-schema-error"); !strings.Contains(got, "inte giltig JSON") {
		t.Fatalf("beside the schema: %q", got)
	}
	if location(t, ctx) != page {
		t.Fatalf("the form was sent: the tab is at %s", location(t, ctx))
	}
	// Valid JSON the server refuses: its message beside the box, the text kept.
	run(t, ctx,
		chromedp.SetValue("#input-schema", `[{"name": "a", "label": "A", "kind": "colour"}]`, chromedp.ByQuery),
		chromedp.Click("form[data-schemas] button[type=submit]", chromedp.ByQuery),
	)
	// The form goes to the server, which answers with the editor and its message. The
	// message and the box are read in one evaluation of the answered page: a query by
	// node id could name a node of the page that was just replaced.
	var got struct{ Msg, Box string }
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(got.Msg, "slaget (kind) går inte att använda här") {
		if time.Now().After(deadline) {
			t.Fatalf("the server's refusal never showed beside the schema: %q", got.Msg)
		}
		time.Sleep(100 * time.Millisecond)
		chromedp.Run(ctx, chromedp.Evaluate(`({
			Msg: (document.querySelector("#input-schema-error") || {}).textContent || "",
			Box: (document.querySelector("#input-schema") || {}).value || ""})`, &got))
	}
	if !strings.Contains(got.Box, "colour") {
		t.Fatalf("the schema box holds %q after the refusal", got.Box)
	}
}
