package examples_test

import (
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/client"
)

// guideCases runs each tool of the author guide as a user would, and checks what it
// answered. Each runs in parallel with the others, on its own tool (and its own sessions
// and settings).
var guideCases = map[string]func(t *testing.T, g *guide){
	"hej":                 testHej,
	"kontrakt":            testKontrakt,
	"verktygslada":        testVerktygslada,
	"toolkit-tur":         testToolkitTur,
	"gruppindelning":      testGruppindelning,
	"csv-jamforelse":      testCSVJamforelse,
	"csv-statistik":       testCSVStatistik,
	"excel-oversikt":      testExcelOversikt,
	"markdown-till-word":  testMarkdownTillWord,
	"pdf-rapport":         testPDFRapport,
	"textsok":             testTextsok,
	"felhantering":        testFelhantering,
	"html-to-pdf-preview": testHTMLToPDFPreview,
}

// testHej: a str answer is one html_sandboxed output; the input_schema trims strings,
// leaves an empty one out, and refuses unknown keys and files.
func testHej(t *testing.T, g *guide) {
	r := g.run(t, g.user, "hej", nil, map[string]any{"namn": "  Ada <3 "})
	succeeded(t, r)
	if h := output(t, r, "html_sandboxed", "").HTML; h != "<p>Hej Ada &lt;3!</p>" {
		t.Errorf("html %q", h)
	}
	for _, inputs := range []map[string]any{nil, {"namn": ""}, {"namn": nil}} {
		r = g.run(t, g.user, "hej", nil, inputs)
		succeeded(t, r)
		if h := output(t, r, "html_sandboxed", "").HTML; h != "<p>Hej världen!</p>" {
			t.Errorf("inputs %v: html %q", inputs, h)
		}
	}
	g.refused(t, "hej", nil, map[string]any{"name": "Ada"}, "name")
	g.refused(t, "hej", nil, map[string]any{"namn": 42}, "namn")
	g.refused(t, "hej", files(t, file{"hej.txt", []byte("hej")}), nil, "")
}

// testKontrakt: the runner contract as a tool sees it with no helper module.
func testKontrakt(t *testing.T, g *guide) {
	src := g.tools["kontrakt"].Source.Source
	note := []byte("rad ett\nrad två\n")
	r := g.run(t, g.user, "kontrakt", files(t, file{"anteckningar.txt", note}), nil)
	succeeded(t, r)
	var facts struct {
		InputDir       string `json:"input_dir"`
		OutputDir      string `json:"output_dir"`
		Cwd, Python    string
		InInputDir     []string `json:"in_input_dir"`
		ScriptBytes    int      `json:"script_bytes"`
		InputWritable  bool     `json:"input_dir_writable"`
		OutputWritable bool     `json:"output_dir_writable"`
		TmpWritable    bool     `json:"tmp_writable"`
		Network        bool
		Memory         map[string]any
		Env            map[string]*string
	}
	jsonValue(t, r, "Körmiljön", &facts)
	want := map[string]string{
		"SKRIPTOTEKET_INPUT_DIR":   "/work/input",
		"SKRIPTOTEKET_OUTPUT_DIR":  "/work/output",
		"SKRIPTOTEKET_RESULT_PATH": "/work/result.json",
		"SKRIPTOTEKET_SCRIPT_PATH": "/work/script.py",
		"SKRIPTOTEKET_ENTRYPOINT":  "run_tool",
		"SKRIPTOTEKET_MEMORY_PATH": "/work/memory.json",
		"HOME":                     "/tmp/home",
	}
	for k, v := range want {
		if facts.Env[k] == nil || *facts.Env[k] != v {
			t.Errorf("%s = %v, want %q", k, facts.Env[k], v)
		}
	}
	if a := facts.Env["SKRIPTOTEKET_ACTION"]; a != nil && *a != "" {
		t.Errorf("SKRIPTOTEKET_ACTION on an initial run: %q", *a)
	}
	var manifest struct{ Files []map[string]any }
	if facts.Env["SKRIPTOTEKET_INPUT_MANIFEST"] == nil || json.Unmarshal([]byte(*facts.Env["SKRIPTOTEKET_INPUT_MANIFEST"]), &manifest) != nil {
		t.Fatalf("SKRIPTOTEKET_INPUT_MANIFEST %v", facts.Env["SKRIPTOTEKET_INPUT_MANIFEST"])
	}
	wantJSON(t, "the manifest", manifest.Files, []map[string]any{{"name": "anteckningar.txt", "path": "/work/input/anteckningar.txt", "bytes": len(note)}})
	wantJSON(t, "the manifest table", output(t, r, "table", "Filer i manifestet").Rows, manifest.Files)
	if facts.InputDir != "/work/input" || facts.OutputDir != "/work/output" || facts.Cwd != "/work" {
		t.Errorf("run_tool(%q, %q) in %q; want /work/input, /work/output in /work", facts.InputDir, facts.OutputDir, facts.Cwd)
	}
	if facts.Python != "3.13" {
		t.Errorf("the runtime's Python is %s, want Debian 13's 3.13", facts.Python)
	}
	wantJSON(t, "the input dir", facts.InInputDir, []string{"anteckningar.txt"})
	if facts.ScriptBytes != len(src) {
		t.Errorf("/work/script.py holds %d bytes, the source %d", facts.ScriptBytes, len(src))
	}
	if facts.InputWritable || !facts.OutputWritable || !facts.TmpWritable || facts.Network {
		t.Errorf("input writable %v, output writable %v, /tmp writable %v, network %v; want false, true, true, false",
			facts.InputWritable, facts.OutputWritable, facts.TmpWritable, facts.Network)
	}
	if len(facts.Memory) != 0 && asJSON(facts.Memory) != `{"settings":{}}` {
		t.Errorf("memory.json of a tool without settings: %s", asJSON(facts.Memory))
	}
	// The artifact holds what the json output showed.
	var saved map[string]any
	if err := json.Unmarshal(artifact(t, g.user, r, "output/kontrakt.json"), &saved); err != nil {
		t.Fatal(err)
	}
	wantJSON(t, "kontrakt.json", saved["env"], facts.Env)
}

// testVerktygslada: every function of skrip_toolkit, over an initial run and two actions.
func testVerktygslada(t *testing.T, g *guide) {
	dikt, recept := g.demoFile(t, "textsok", "dikt.txt"), g.demoFile(t, "textsok", "recept.txt")
	paths := files(t, dikt, recept)
	g.refused(t, "verktygslada", nil, map[string]any{"rubrik": "x"}, "filer")
	g.refused(t, "verktygslada", files(t, file{"bild.png", []byte("png")}), map[string]any{"rubrik": "x"}, "filer")

	r := g.run(t, g.user, "verktygslada", paths, nil)
	failedWith(t, r, "Skriv en rubrik.")

	r = g.run(t, g.user, "verktygslada", paths, map[string]any{"rubrik": "Texter"})
	succeeded(t, r)
	if md := output(t, r, "markdown", "").Markdown; md != "## Texter\n\n2 fil(er) uppladdade." {
		t.Errorf("markdown %q", md)
	}
	wantJSON(t, "files", column(output(t, r, "table", "Dina filer"), "name"), []string{"dikt.txt", "recept.txt"})
	if len(r.NextActions) != 1 || r.NextActions[0].ActionID != "anteckna" || r.NextActions[0].Prefill["anteckning"] != "Texter, anteckning 1: " {
		t.Fatalf("next actions %s", asJSON(r.NextActions))
	}

	for i, note := range []string{"Första", "Andra"} {
		r = g.act(t, g.user, r, "anteckna", map[string]any{"anteckning": "  " + note + " "})
		succeeded(t, r)
		if md := output(t, r, "markdown", "").Markdown; !strings.HasSuffix(md, "- "+note) || strings.Count(md, "\n- ") != i+1 {
			t.Errorf("markdown after note %d: %q", i+1, md)
		}
		wantJSON(t, "input_files() on an action run", column(output(t, r, "table", "Dina filer"), "name"), []string{"dikt.txt", "recept.txt"})
		var names []string
		jsonValue(t, r, "Hela manifestet", &names)
		if len(names) != 2 || !contains(names, "dikt.txt") || !contains(names, "recept.txt") {
			t.Errorf("manifest() on an action run: %v; want the two files, not action.json", names)
		}
	}
	s, err := g.user.SessionOf(context.Background(), "verktygslada", "default")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, "the session state", s.State, map[string]any{"rubrik": "Texter", "anteckningar": []string{"Första", "Andra"}})
	if r.NextActions[0].Prefill["anteckning"] != "Texter, anteckning 3: " {
		t.Errorf("prefill %v", r.NextActions[0].Prefill)
	}
	r = g.act(t, g.user, r, "anteckna", map[string]any{"anteckning": "   "})
	failedWith(t, r, "Anteckningen är tom.")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// testToolkitTur: every function of skriptoteket_toolkit, every input field kind, and
// settings in production and in the editor.
func testToolkitTur(t *testing.T, g *guide) {
	const slug = "toolkit-tur"
	settings := map[string]any{"signatur": "Ada", "farg": "gron", "rader": 5}
	putSettings(t, g.user, slug, "", settings)
	for _, bad := range []map[string]any{{"farg": "rod"}, {"okand": "x"}, {"rader": "fem"}} {
		var e *client.Error
		err := g.user.Do(context.Background(), http.MethodPut, "/api/v1/tools/"+slug+"/settings", map[string]any{"values": bad}, nil)
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			t.Errorf("settings %v: %v; want a 400", bad, err)
		}
	}
	g.refused(t, slug, nil, map[string]any{"antal": "tre"}, "antal")
	g.refused(t, slug, nil, map[string]any{"lage": "mellan"}, "lage")
	g.refused(t, slug, nil, map[string]any{"versaler": "kanske"}, "versaler")

	bilaga := []byte("en bilaga\n")
	inputs := map[string]any{"titel": " Prov ", "antal": "3", "vikt": "2.5", "lage": "lang", "versaler": true, "beskrivning": "rad 1\nrad 2"}
	r := g.run(t, g.user, slug, files(t, file{"bilaga.txt", bilaga}), inputs)
	succeeded(t, r)
	var seen map[string]json.RawMessage
	jsonValue(t, r, "skriptoteket_toolkit", &seen)
	entry := map[string]any{"name": "bilaga.txt", "path": "/work/input/bilaga.txt", "bytes": len(bilaga)}
	wantJSON(t, "read_inputs()", seen["read_inputs"], map[string]any{"titel": "Prov", "antal": 3, "vikt": 2.5, "lage": "lang", "versaler": true, "beskrivning": "rad 1\nrad 2"})
	wantJSON(t, "read_settings()", seen["read_settings"], settings)
	wantJSON(t, "read_memory()", seen["read_memory"], map[string]any{"settings": settings})
	wantJSON(t, "read_input_manifest()", seen["read_input_manifest"], map[string]any{"files": []any{entry}})
	wantJSON(t, "list_input_files()", seen["list_input_files"], []any{entry})
	wantJSON(t, "read_action()", seen["read_action"], nil)
	wantJSON(t, "get_action_parts()", seen["get_action_parts"], []any{nil, map[string]any{}, map[string]any{}})
	if m := output(t, r, "notice", "").Message; m != "Steg 0. Hälsningar, Ada." {
		t.Errorf("notice %q", m)
	}
	wantJSON(t, "prefill", r.NextActions[0].Prefill, map[string]any{"anteckning": "Steg 1"})

	r = g.act(t, g.user, r, "steg", map[string]any{"anteckning": "Steg 1"})
	succeeded(t, r)
	jsonValue(t, r, "skriptoteket_toolkit", &seen)
	act := map[string]any{"action_id": "steg", "input": map[string]any{"anteckning": "Steg 1"}, "state": map[string]any{"steg": 0}}
	wantJSON(t, "read_action()", seen["read_action"], act)
	wantJSON(t, "get_action_parts()", seen["get_action_parts"], []any{"steg", act["input"], act["state"]})
	var listed []map[string]any
	json.Unmarshal(seen["list_input_files"], &listed)
	if len(listed) != 1 || !strings.Contains(asJSON(listed), `"name":"bilaga.txt"`) {
		t.Errorf("list_input_files() on an action run: %s; want bilaga.txt alone, as on the original hub", asJSON(listed))
	}
	if m := output(t, r, "notice", "").Message; m != "Steg 1. Hälsningar, Ada." {
		t.Errorf("notice %q", m)
	}
	wantJSON(t, "prefill", r.NextActions[0].Prefill, map[string]any{"anteckning": "Steg 2"})

	// The editor's settings are its own, per version, and leave the user's alone.
	version := g.tools[slug].Version.ID
	putSettings(t, g.author, slug, version, map[string]any{"signatur": "Redaktören"})
	er, err := g.author.EditorRun(context.Background(), version, nil, nil, 0)
	if err == nil {
		er, err = g.author.WaitRun(context.Background(), er)
	}
	if err != nil {
		t.Fatal(err)
	}
	succeeded(t, er)
	jsonValue(t, er, "skriptoteket_toolkit", &seen)
	wantJSON(t, "read_settings() in the editor", seen["read_settings"], map[string]any{"signatur": "Redaktören"})
	var mine struct{ Values map[string]any }
	if err := g.user.Do(context.Background(), http.MethodGet, "/api/v1/tools/"+slug+"/settings", nil, &mine); err != nil {
		t.Fatal(err)
	}
	wantJSON(t, "the user's settings", mine.Values, settings)
}

// testGruppindelning: a tool written only against the original hub's documented API
// (skriptoteket_toolkit, tool_errors, pdf_helper), with settings, a PDF, an .xlsx or .csv
// upload, and a next action that reads the upload again.
func testGruppindelning(t *testing.T, g *guide) {
	const slug = "gruppindelning"
	src := g.tools[slug].Source.Source
	if strings.Contains(strings.ReplaceAll(strings.ToLower(src), "skriptoteket", ""), "skrip") {
		t.Fatalf("examples/guide/gruppindelning/script.py uses one of skrip's own names; it must hold only the original hub's")
	}
	putSettings(t, g.user, slug, "", map[string]any{"skola": "Byskolan"})
	r := g.run(t, g.user, slug, files(t, g.demoFile(t, slug, "klass.csv")), map[string]any{"gruppstorlek": "3", "metod": "alfabetisk", "pdf": true})
	succeeded(t, r)
	if m := output(t, r, "notice", "").Message; m != "7 elever i 3 grupper (bokstavsordning)." {
		t.Errorf("notice %q", m)
	}
	wantJSON(t, "groups", column(output(t, r, "table", "Grupper"), "elever"), []string{"Ali, Bo, Dragan", "Elin, Ines", "Märta, Vera"})
	pages, _, text := pdfInfo(t, artifact(t, g.user, r, "output/grupper.pdf"))
	for _, w := range []string{"Grupper", "Byskolan", "Grupp 3", "Märta", "Dragan"} {
		if !strings.Contains(text, w) {
			t.Errorf("grupper.pdf (%s pages) lacks %q: %s", pages, w, text)
		}
	}
	wantJSON(t, "prefill", r.NextActions[0].Prefill, map[string]any{"gruppstorlek": 3, "metod": "alfabetisk"})

	// The next action reads the list uploaded at the start.
	r = g.act(t, g.user, r, "ny_indelning", map[string]any{"gruppstorlek": 2, "metod": "alfabetisk"})
	succeeded(t, r)
	wantJSON(t, "groups of 2", column(output(t, r, "table", "Grupper"), "elever"), []string{"Ali, Bo", "Dragan, Elin", "Ines, Märta", "Vera"})
	if _, _, text := pdfInfo(t, artifact(t, g.user, r, "output/grupper.pdf")); !strings.Contains(text, "Grupp 4") {
		t.Errorf("the second grupper.pdf lacks Grupp 4: %s", text)
	}
	r = g.act(t, g.user, r, "ny_indelning", map[string]any{"gruppstorlek": 0})
	failedWith(t, r, "Gruppstorleken måste vara ett heltal, minst 1.")

	// The same list as an .xlsx, with its header row.
	book := xlsx(t, sheet{"Klass 7A", [][]any{{"Namn"}, {"Vera"}, {"Ali"}, {"Märta"}, {"Bo"}, {"Elin"}, {"Ines"}, {"Dragan"}}})
	r = g.run(t, g.user, slug, files(t, file{"klass.xlsx", book}), map[string]any{"gruppstorlek": 4})
	succeeded(t, r)
	wantJSON(t, "groups from .xlsx", column(output(t, r, "table", "Grupper"), "elever"), []string{"Ali, Bo, Dragan, Elin", "Ines, Märta, Vera"})
	if len(r.Artifacts) != 0 {
		t.Errorf("a PDF without asking for one: %s", asJSON(r.Artifacts))
	}

	// A new run without files gets the list kept from the last one (and the file field's
	// min counts it); someone with no list kept is asked for one.
	r = g.run(t, g.user, slug, nil, map[string]any{"gruppstorlek": 7})
	succeeded(t, r)
	wantJSON(t, "one group from the kept .xlsx", column(output(t, r, "table", "Grupper"), "elever"), []string{"Ali, Bo, Dragan, Elin, Ines, Märta, Vera"})
	g.refusedAs(t, g.author, slug, nil, map[string]any{"gruppstorlek": 3}, "klasslista")
}

// testCSVJamforelse: two uploads read together, each with its own delimiter.
func testCSVJamforelse(t *testing.T, g *guide) {
	const slug = "csv-jamforelse"
	v1, v2 := g.demoFile(t, slug, "vecka1.csv"), g.demoFile(t, slug, "vecka2.csv")
	g.refused(t, slug, files(t, v1), nil, "filer")
	g.refused(t, slug, files(t, v1, file{"vecka2.txt", v2.body}), nil, "filer")

	// Upload order does not matter.
	r := g.run(t, g.user, slug, files(t, v2, v1), map[string]any{"nyckel": "id"})
	succeeded(t, r)
	if m := output(t, r, "notice", "").Message; m != "3 skillnad(er) mellan vecka1.csv och vecka2.csv." {
		t.Errorf("notice %q", m)
	}
	tb := output(t, r, "table", "Skillnader (nyckel: id)")
	wantJSON(t, "rows", tb.Rows, []map[string]any{
		{"nyckel": "2", "andring": "bara i vecka1.csv", "detaljer": ""},
		{"nyckel": "4", "andring": "bara i vecka2.csv", "detaljer": ""},
		{"nyckel": "1", "andring": "ändrad", "detaljer": "poäng: 12 → 14"},
	})
	got := strings.ReplaceAll(string(artifact(t, g.user, r, "output/skillnader.csv")), "\r\n", "\n")
	want := "nyckel,andring,detaljer\n2,bara i vecka1.csv,\n4,bara i vecka2.csv,\n1,ändrad,poäng: 12 → 14\n"
	if got != want {
		t.Errorf("skillnader.csv:\n%s\nwant:\n%s", got, want)
	}
	r = g.run(t, g.user, slug, files(t, v1, v2), map[string]any{"nyckel": "elev"})
	failedWith(t, r, "vecka1.csv saknar kolumnen 'elev'. Kolumner: id, namn, poäng.")
}

// testCSVStatistik: pandas.
func testCSVStatistik(t *testing.T, g *guide) {
	const slug = "csv-statistik"
	csv := g.demoFile(t, slug, "resultat.csv")
	r := g.run(t, g.user, slug, files(t, csv), map[string]any{"gruppera": "klass"})
	succeeded(t, r)
	if m := output(t, r, "notice", "").Message; m != "resultat.csv: 5 rader, 2 sifferkolumner." {
		t.Errorf("notice %q", m)
	}
	wantJSON(t, "statistics", output(t, r, "table", "Statistik").Rows, []map[string]any{
		{"kolumn": "poäng", "count": 5, "mean": 15, "median": 15, "min": 9, "max": 21},
		{"kolumn": "närvaro", "count": 5, "mean": 0.87, "median": 0.9, "min": 0.7, "max": 1},
	})
	wantJSON(t, "means per group", output(t, r, "table", "Medelvärden per klass").Rows, []map[string]any{
		{"klass": "7A", "poäng": 15, "närvaro": 0.85},
		{"klass": "7B", "poäng": 15, "närvaro": 0.883},
	})
	spec, _ := json.Marshal(output(t, r, "vega_lite", "").Spec)
	if !strings.Contains(string(spec), `"mark":"bar"`) || !strings.Contains(string(spec), `"7B"`) {
		t.Errorf("vega_lite spec %s", spec)
	}
	saved := string(artifact(t, g.user, r, "output/statistik.csv"))
	if !strings.HasPrefix(saved, "kolumn,count,mean,median,min,max\n") || !strings.Contains(saved, "\nnärvaro,5.0,0.87,0.9,0.7,1.0\n") {
		t.Errorf("statistik.csv:\n%s", saved)
	}
	r = g.run(t, g.user, slug, files(t, csv), map[string]any{"gruppera": "årskurs"})
	failedWith(t, r, "Kolumnen 'årskurs' finns inte. Kolumner: namn, klass, poäng, närvaro.")
}

// testExcelOversikt: openpyxl reads an .xlsx upload; a setting limits the rows shown.
func testExcelOversikt(t *testing.T, g *guide) {
	const slug = "excel-oversikt"
	book := xlsx(t,
		sheet{"Betyg", [][]any{{"Namn", "Poäng", "Frånvaro"}, {"Ali", 12, 1.5}, {"Bo", 18, 0}, {"Elin", 9, 2.25}}},
		sheet{"Anteckningar", [][]any{{"Klassresa i maj"}}},
	)
	putSettings(t, g.user, slug, "", map[string]any{"max_rader": 2})
	r := g.run(t, g.user, slug, files(t, file{"betyg.xlsx", book}), nil)
	succeeded(t, r)
	wantJSON(t, "sheets", output(t, r, "table", "Blad").Rows, []map[string]any{{"blad": "Betyg", "rader": 4}, {"blad": "Anteckningar", "rader": 1}})
	rows := output(t, r, "table", "Betyg (de första 2 raderna)")
	wantJSON(t, "rows", rows.Rows, []map[string]any{{"Namn": "Ali", "Poäng": 12, "Frånvaro": 1.5}, {"Namn": "Bo", "Poäng": 18, "Frånvaro": 0}})
	var sums map[string]float64
	jsonValue(t, r, "Summor", &sums)
	wantJSON(t, "sums", sums, map[string]float64{"Poäng": 39, "Frånvaro": 3.75})

	r = g.run(t, g.user, slug, files(t, file{"trasig.xlsx", []byte("det här är ingen arbetsbok")}), nil)
	if r.Status != "failed" || !strings.HasPrefix(deref(r.ErrorSummary), "trasig.xlsx går inte att läsa som Excel-fil (") {
		t.Errorf("a broken .xlsx: %s %q", r.Status, deref(r.ErrorSummary))
	}
	g.refused(t, slug, files(t, file{"betyg.xls", book}), nil, "arbetsbok")
}

// testMarkdownTillWord: pandoc and python-docx make a .docx that holds the text, the
// author and the header from the settings (the editor's own in the editor).
func testMarkdownTillWord(t *testing.T, g *guide) {
	const slug = "markdown-till-word"
	putSettings(t, g.user, slug, "", map[string]any{"forfattare": "Ada Lovelace", "sidhuvud": "Matematik 7A"})
	r := g.run(t, g.user, slug, files(t, g.demoFile(t, slug, "planering.md")), map[string]any{"titel": "Planering"})
	succeeded(t, r)
	wantJSON(t, "headings", column(output(t, r, "table", "Rubriker"), "rubrik"), []string{"Planering vecka 12", "Lektioner", "Läxa"})
	docx := zipped(t, artifact(t, g.user, r, "output/planering.docx"))
	body := wordText(docx["word/document.xml"])
	for _, w := range []string{"Planering vecka 12", "Vi arbetar med bråk och procent.", "Bråk på tallinjen", "Procent i vardagen", "Torsdag", "Sida 45"} {
		if !strings.Contains(body, w) {
			t.Errorf("word/document.xml lacks %q: %s", w, body)
		}
	}
	core := docx["docProps/core.xml"]
	if !regexp.MustCompile(`<dc:creator>Ada Lovelace</dc:creator>`).MatchString(core) || !strings.Contains(core, "<dc:title>Planering</dc:title>") {
		t.Errorf("docProps/core.xml: %s", core)
	}
	var header string
	for name, part := range docx {
		if strings.HasPrefix(name, "word/header") {
			header += wordText(part)
		}
	}
	if !strings.Contains(header, "Matematik 7A") {
		t.Errorf("no header holds the setting: %q", header)
	}

	// In the editor, markdown typed in the form and the editor's own settings.
	version := g.tools[slug].Version.ID
	putSettings(t, g.author, slug, version, map[string]any{"forfattare": "Redaktören"})
	er, err := g.author.EditorRun(context.Background(), version, nil, map[string]any{"markdown": "# Hej\n\nEtt *kort* dokument."}, 0)
	if err == nil {
		er, err = g.author.WaitRun(context.Background(), er)
	}
	if err != nil {
		t.Fatal(err)
	}
	succeeded(t, er)
	docx = zipped(t, artifact(t, g.author, er, "output/dokument.docx"))
	if body := wordText(docx["word/document.xml"]); !strings.Contains(body, "Ett kort dokument.") {
		t.Errorf("word/document.xml: %s", body)
	}
	if core := docx["docProps/core.xml"]; !strings.Contains(core, "<dc:creator>Redaktören</dc:creator>") || !strings.Contains(core, "<dc:title>dokument</dc:title>") {
		t.Errorf("the editor's docProps/core.xml: %s", core)
	}

	// Without files, a run gets those of the session's last run: clear them first.
	if err := g.user.ClearSessionFiles(context.Background(), slug, "default"); err != nil {
		t.Fatal(err)
	}
	r = g.run(t, g.user, slug, nil, map[string]any{"markdown": "   "})
	failedWith(t, r, "Ladda upp en markdown-fil eller skriv markdown i textrutan.")
}

// testPDFRapport: jinja2, pdf_helper (a sub-folder, an uploaded image through the base
// URL /work/) and pypdf.
func testPDFRapport(t *testing.T, g *guide) {
	const slug = "pdf-rapport"
	inputs := map[string]any{"rubrik": "Månadsrapport", "text": "Första stycket.\n\nAndra stycket, om <b>taggar</b>.", "sidstorlek": "A5"}
	// First without a logo: a run without files gets the files of the session's last run.
	noLogo := g.run(t, g.user, slug, nil, inputs)
	succeeded(t, noLogo)
	r := g.run(t, g.user, slug, files(t, g.demoFile(t, slug, "logo.svg")), inputs)
	succeeded(t, r)
	if len(r.Artifacts) != 1 {
		t.Fatalf("artifacts %s", asJSON(r.Artifacts))
	}
	pdf := artifact(t, g.user, r, "output/rapporter/rapport.pdf")
	pages, size, text := pdfInfo(t, pdf)
	if pages != "1" || !strings.HasPrefix(size, "419.") || !strings.Contains(size, "x 595.") {
		t.Errorf("%s pages of %s; want 1 page of A5", pages, size)
	}
	for _, w := range []string{"Månadsrapport", "Första stycket.", "Andra stycket, om <b>taggar</b>.", "Sida 1"} {
		if !strings.Contains(text, w) {
			t.Errorf("rapport.pdf lacks %q: %s", w, text)
		}
	}
	if m := output(t, r, "notice", "").Message; !strings.HasPrefix(m, "Rapporten är klar: 1 sida/sidor, ") || !strings.Contains(m, " "+itoa(len(pdf))+" byte") {
		t.Errorf("notice %q (the PDF has %d bytes)", m, len(pdf))
	}
	// The uploaded logo reached the PDF through the base URL: its blue is on the page,
	// and only when it was uploaded.
	with, without := logoPixels(t, pdf), logoPixels(t, artifact(t, g.user, noLogo, "output/rapporter/rapport.pdf"))
	if with < 20 || without != 0 {
		t.Errorf("the logo's blue covers %d pixels of the page with the logo and %d of the one without; want many and none", with, without)
	}
	r = g.run(t, g.user, slug, nil, map[string]any{"text": "utan rubrik"})
	failedWith(t, r, "Skriv en rubrik.")
}

// logoPixels renders the first page of pdf at 30 dpi and counts the pixels of the demo
// logo's blue (#1d5c8a).
func logoPixels(t *testing.T, pdf []byte) int {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "page.pdf")
	if err := os.WriteFile(p, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("pdftoppm", "-png", "-r", "30", "-f", "1", "-singlefile", p, filepath.Join(dir, "page")).CombinedOutput(); err != nil {
		t.Fatalf("pdftoppm: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "page.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	near := func(v uint32, want int) bool { d := int(v>>8) - want; return d > -16 && d < 16 }
	n := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(r, 0x1d) && near(g, 0x5c) && near(b, 0x8a) {
				n++
			}
		}
	}
	return n
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// testTextsok: session files across steps, ignoring action.json, prefill and state, and
// a new run without files reusing the session's files.
func testTextsok(t *testing.T, g *guide) {
	const slug = "textsok"
	dikt, recept := g.demoFile(t, slug, "dikt.txt"), g.demoFile(t, slug, "recept.txt")
	r := g.run(t, g.user, slug, files(t, dikt, recept), nil)
	succeeded(t, r)
	if m := output(t, r, "notice", "").Message; m != "2 text(er), 24 ord: dikt.txt, recept.txt." {
		t.Errorf("notice %q", m)
	}
	wantJSON(t, "prefill", r.NextActions[0].Prefill, map[string]any{"ord": "äpplet"})

	r = g.act(t, g.user, r, "sok", map[string]any{"ord": "äpple"})
	succeeded(t, r)
	hits := output(t, r, "table", "Träffar för äpple")
	wantJSON(t, "hits", column(hits, "text"), []string{"Äpplet faller inte långt från trädet.", "Ett äpple om dagen håller doktorn borta.",
		"Skala äpplen och skär dem i bitar.", "Strö kanel över äpplet."})
	r = g.act(t, g.user, r, "sok", map[string]any{"ord": "kanel"})
	succeeded(t, r)
	wantJSON(t, "hits", output(t, r, "table", "Träffar för kanel").Rows, []map[string]any{{"fil": "recept.txt", "rad": 2, "text": "Strö kanel över äpplet."}})
	if md := output(t, r, "markdown", "").Markdown; md != "Dina sökningar: äpple, kanel" {
		t.Errorf("markdown %q", md)
	}
	wantJSON(t, "prefill", r.NextActions[0].Prefill, map[string]any{"ord": "kanel"})

	// A new run without files gets the session's files; one with files replaces them.
	r = g.run(t, g.user, slug, nil, nil)
	succeeded(t, r)
	if m := output(t, r, "notice", "").Message; m != "2 text(er), 24 ord: dikt.txt, recept.txt." {
		t.Errorf("a run without files: notice %q", m)
	}
	r = g.run(t, g.user, slug, files(t, recept), nil)
	succeeded(t, r)
	if m := output(t, r, "notice", "").Message; m != "1 text(er), 11 ord: recept.txt." {
		t.Errorf("a run with one file: notice %q", m)
	}
	list, err := g.user.SessionFiles(context.Background(), slug, "default")
	if err != nil || len(list.Files) != 1 || list.Files[0].Name != "recept.txt" {
		t.Errorf("session files %+v, %v", list, err)
	}
}

// testFelhantering: ToolUserError from either module, a notice of level error, a crash,
// and pdf_helper refusing a file name.
func testFelhantering(t *testing.T, g *guide) {
	const slug = "felhantering"
	run := func(fall string) client.Run { return g.run(t, g.user, slug, nil, map[string]any{"fall": fall}) }

	failedWith(t, run("anvandarfel"), "Filen saknar kolumnen 'namn'. Lägg till den och försök igen.")

	r := run("tomt_fel")
	if r.Status != "failed" || deref(r.ErrorSummary) != "Ett fel inträffade." {
		t.Errorf("an empty ToolUserError: %s %q; want failed with the original hub's sentence", r.Status, deref(r.ErrorSummary))
	}

	r = run("notis")
	succeeded(t, r)
	if len(r.Outputs) != 3 || r.Outputs[0].Level != "error" || r.Outputs[1].Level != "warning" || r.Outputs[2].Kind != "markdown" {
		t.Errorf("outputs %s", asJSON(r.Outputs))
	}

	r = run("krasch")
	failedWith(t, r, "Tool execution failed (ZeroDivisionError).")
	if s := deref(r.Stderr); !strings.Contains(s, "Traceback") || !strings.Contains(s, "ZeroDivisionError: division by zero") || !strings.Contains(s, "om att räkna ut medelvärdet") {
		t.Errorf("stderr %q", s)
	}

	r = run("pdf_fel")
	if s := deref(r.ErrorSummary); r.Status != "failed" || s == "" || strings.Contains(s, "Tool execution failed") || strings.Contains(s, "Traceback") {
		t.Errorf("pdf_helper with ../utanfor.pdf: %s %q; want failed with its ToolUserError", r.Status, s)
	}
	if len(r.Artifacts) != 0 {
		t.Errorf("artifacts %s", asJSON(r.Artifacts))
	}

	r = run("samma_klass")
	succeeded(t, r)
	if v := output(t, r, "json", "Samma klass").Value; v != true {
		t.Errorf("tool_errors.ToolUserError is skrip_toolkit.ToolUserError: %v", v)
	}
	g.refused(t, slug, nil, map[string]any{"fall": "okant"}, "fall")
}

// testHTMLToPDFPreview: docs/spec.md §8's tool, the guide's example of HTML with its CSS and
// images: a preview, then the uploaded files converted to PDF.
func testHTMLToPDFPreview(t *testing.T, g *guide) {
	ex := g.demo["html-to-pdf-preview"]
	var named []file
	for name, body := range ex.Demo {
		named = append(named, file{name, body})
	}
	r := g.run(t, g.user, ex.Slug, files(t, named...), nil)
	succeeded(t, r)
	if h := output(t, r, "html_sandboxed", "").HTML; !strings.Contains(h, "data:image/svg+xml;base64,") || !strings.Contains(h, "<style>") {
		t.Errorf("the preview inlines neither the CSS nor the image: %.300s", h)
	}
	r = g.act(t, g.user, r, "convert", map[string]any{"page_size": "letter", "orientation": "landscape"})
	succeeded(t, r)
	_, size, text := pdfInfo(t, artifact(t, g.user, r, "output/index.pdf"))
	if !strings.HasPrefix(size, "792 x 612") {
		t.Errorf("page size %q, want Letter landscape", size)
	}
	h1 := regexp.MustCompile(`<h1[^>]*>([^<]+)</h1>`).FindStringSubmatch(string(ex.Demo["index.html"]))
	if h1 == nil || !strings.Contains(text, strings.Join(strings.Fields(h1[1]), " ")) {
		t.Errorf("index.pdf lacks the page's heading: %s", text)
	}
}
