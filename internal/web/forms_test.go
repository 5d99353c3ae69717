package web

import (
	"html/template"
	"io/fs"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/upload"
)

func intp(n int) *int { return &n }

var testSchema = contract.InputSchema{
	{Field: contract.Field{Name: "name", Label: "Namn", Kind: contract.FieldString}},
	{Field: contract.Field{Name: "notes", Label: "Anteckningar", Kind: contract.FieldText}},
	{Field: contract.Field{Name: "size", Label: "Gruppstorlek", Kind: contract.FieldInteger}},
	{Field: contract.Field{Name: "ratio", Label: "Andel", Kind: contract.FieldNumber}},
	{Field: contract.Field{Name: "shuffle", Label: "Blanda", Kind: contract.FieldBoolean}},
	{Field: contract.Field{Name: "mode", Label: "Läge", Kind: contract.FieldEnum, Options: []contract.Option{{Value: "a", Label: "A"}, {Value: "b", Label: "B"}}}},
	{Field: contract.Field{Name: "lists", Label: "Klasslistor", Kind: contract.FieldFile}, Accept: []string{".csv", ".xlsx"}, Min: intp(1), Max: intp(3)},
}

func TestRunFormFromSchema(t *testing.T) {
	lim := upload.Limits{MaxFiles: 20, MaxFileBytes: 200_000, MaxTotalBytes: 1_000_000}
	f := newRunForm(testSchema, "sandbox-", "Välj filer", "(inget valt)", lim)
	if len(f.Fields) != 6 || f.File == nil {
		t.Fatalf("form has %d fields and file slot %v", len(f.Fields), f.File)
	}
	s := f.File
	if s.Name != "lists" || s.Label != "Klasslistor" || s.Min != 1 || s.Max != 3 || !s.Multiple() || s.Free || s.AcceptAttr() != ".csv,.xlsx" || s.ID != "sandbox-files" {
		t.Fatalf("file slot = %+v", s)
	}
	if !f.Required() {
		t.Fatal("a slot with min 1 and no kept files is not required")
	}
	f.SessionFiles = 2
	if f.Required() {
		t.Fatal("a slot with min 1 is required though the session keeps files, which a run without files gets")
	}
	if !f.KeptFit() || f.KeptForSlot() != 2 {
		t.Fatalf("2 kept files do not fill a slot of 1–3 (fit %v, counted %d)", f.KeptFit(), f.KeptForSlot())
	}
	// As the server counts them: a kept file of a type the slot does not take is not used.
	f.KeptNames = []string{"elever.csv", "bild.png"}
	if f.KeptFit() || f.KeptForSlot() != 0 || !f.Required() {
		t.Fatalf("a kept .png fits a slot of .csv and .xlsx (fit %v, required %v)", f.KeptFit(), f.Required())
	}
	f.KeptNames = []string{"elever.CSV", "lärare.xlsx"}
	if !f.KeptFit() {
		t.Fatal("kept files of the slot's types do not fit it")
	}
	f.KeptNames = nil
	if got := f.textFields(); !reflect.DeepEqual(got, []string{"csrf", "in.name", "in.notes", "in.size", "in.ratio", "in.shuffle", "in.mode"}) {
		t.Fatalf("text fields = %q", got)
	}
	if f.Fields[0].ID != "sandbox-in-name" || f.Fields[0].ErrorID() != "sandbox-in-name-error" || f.Fields[5].Blank == "" {
		t.Fatalf("first field = %+v, enum = %+v", f.Fields[0], f.Fields[5])
	}
	f.SessionFiles = 4
	if f.KeptFit() || !f.Required() {
		t.Errorf("a slot of at most 3 files offers 4 kept ones: required %v", f.Required())
	}
	f.SessionFiles = 2
	if f.File.AcceptList() != ".csv, .xlsx" {
		t.Errorf("the slot lists its types as %q", f.File.AcceptList())
	}

	// Strings go as typed, for the server's one set of rules; a boolean is always sent.
	in := f.inputs(map[string]string{"csrf": "x", "in.name": " Ada ", "in.size": "4", "in.ratio": "", "in.mode": "b"})
	want := map[string]any{"name": " Ada ", "size": "4", "ratio": "", "shuffle": false, "mode": "b"}
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("inputs = %#v; want %#v", in, want)
	}
	if in := f.inputs(map[string]string{"in.shuffle": "true"}); in["shuffle"] != true {
		t.Fatalf("a ticked box gave %#v", in["shuffle"])
	}
	// A box without a value sends "on"; a value that is neither goes on as sent, for the
	// server to refuse beside the field rather than read as false.
	for sent, want := range map[string]any{"on": true, "false": false, "": false, "maybe": "maybe"} {
		if in := f.inputs(map[string]string{"in.shuffle": sent}); in["shuffle"] != want {
			t.Errorf("a box sending %q gave %#v; want %#v", sent, in["shuffle"], want)
		}
	}

	// A refusal lands beside the field it names, and what was typed stays.
	f.keep(map[string]string{"in.name": "Ada", "in.shuffle": "true", "in.mode": "b"})
	f.refuse("size", "size must be a whole number")
	f.refuse("lists", "lists takes .csv or .xlsx")
	f.refuse("", "at capacity")
	if f.Fields[0].Value != "Ada" || !f.Fields[4].Checked || f.Fields[5].Value != "b" {
		t.Fatalf("kept values: %+v", f.Fields)
	}
	if f.Fields[2].Error == "" || f.File.Error == "" || f.Error != "at capacity" || f.Fields[0].Error != "" {
		t.Fatalf("errors: size %q, slot %q, form %q", f.Fields[2].Error, f.File.Error, f.Error)
	}
	f.refuse("in.notes", "the field \"in.notes\" is larger than the 64 KiB limit")
	if f.Fields[1].Error == "" {
		t.Fatal("a refusal naming the multipart field did not land beside it")
	}
}

func TestRunFormWithoutSchema(t *testing.T) {
	f := newRunForm(nil, "", "Välj filer", "(inget valt)", upload.DefaultLimits())
	if len(f.Fields) != 0 || f.File == nil || !f.File.Free || f.File.Max != 20 || f.Required() {
		t.Fatalf("form without a schema = %+v, slot %+v", f, f.File)
	}
	if f.inputs(map[string]string{"csrf": "x"}) != nil {
		t.Fatal("a form without fields made inputs")
	}
	if f.SessionFiles = 3; !f.KeptFit() {
		t.Fatal("a form without a schema does not reuse the kept files, which the server gives a run without files")
	}
	// A schema without a file field: a form without a slot, so the tool gets no files.
	f = newRunForm(testSchema[:1], "", "Välj filer", "(inget valt)", upload.DefaultLimits())
	if f.File != nil {
		t.Fatalf("a schema without a file field has slot %+v", f.File)
	}
}

func TestSettingsForm(t *testing.T) {
	schema := contract.SettingsSchema{
		{Name: "signature", Label: "Signatur", Kind: contract.FieldString},
		{Name: "size", Label: "Storlek", Kind: contract.FieldInteger},
		{Name: "ratio", Label: "Andel", Kind: contract.FieldNumber},
		{Name: "color", Label: "Färg", Kind: contract.FieldBoolean},
		{Name: "font", Label: "Typsnitt", Kind: contract.FieldEnum, Options: []contract.Option{{Value: "serif", Label: "Serif"}}},
		{Name: "days", Label: "Dagar", Kind: contract.FieldMultiEnum, Options: []contract.Option{{Value: "mon", Label: "Måndag"}, {Value: "tue", Label: "Tisdag"}}},
	}
	s := newSettingsPanel(schema, map[string]any{"signature": "Ada", "size": int64(4), "color": true, "days": []string{"tue"}}, "", "(inget valt)")
	if s.Fields[0].Value != "Ada" || s.Fields[1].Value != "4" || !s.Fields[3].Checked || !s.Fields[5].Selected["tue"] || s.Fields[5].Selected["mon"] {
		t.Fatalf("saved values shown as %+v", s.Fields)
	}
	if s.Fields[0].Input != "set.signature" || s.Fields[0].ID != "set-signature" {
		t.Fatalf("names: %+v", s.Fields[0])
	}

	form := url.Values{"set.signature": {"Bo"}, "set.size": {" 7 "}, "set.font": {""}, "set.days": {"mon", "tue"}}
	got := settingsValues(schema, form)
	want := map[string]any{"signature": "Bo", "size": " 7 ", "font": "", "color": false, "days": []any{"mon", "tue"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("settings = %#v; want %#v", got, want)
	}
	if got := settingsValues(schema, url.Values{"set.color": {"true"}}); got["color"] != true || !reflect.DeepEqual(got["days"], []any{}) || len(got) != 2 {
		t.Fatalf("a ticked box and nothing else gave %#v", got)
	}
	for sent, want := range map[string]any{"on": true, "false": false, "maybe": "maybe"} {
		if got := settingsValues(schema, url.Values{"set.color": {sent}}); got["color"] != want {
			t.Errorf("a settings box sending %q gave %#v; want %#v", sent, got["color"], want)
		}
	}

	s.keep(form)
	s.refuse("size", "size must be a whole number")
	if s.Fields[0].Value != "Bo" || s.Fields[3].Checked || !s.Fields[5].Selected["mon"] || s.Fields[1].Error == "" || s.Error != "" {
		t.Fatalf("after a refusal: %+v / %q", s.Fields, s.Error)
	}
}

func TestRefusedField(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errs.New(contract.ErrInvalidInput, map[string]any{"field": "size", "rule": "integer"}, "no"), "size"},
		{errs.New(upload.ErrTooLarge, map[string]any{"file": "big.csv", "limit_bytes": 1}, "no"), "files"},
		{errs.New(upload.ErrInvalid, nil, "no"), ""},
	} {
		if got := refusedField(c.err); got != c.want {
			t.Errorf("refusedField(%v) = %q; want %q", c.err, got, c.want)
		}
	}
}

func TestUsageHeadingsSitUnderThePage(t *testing.T) {
	html := string(renderUsage("# Så gör du\n\n## Steg ett\n\n###### djup\n\n<script>alert(1)</script> [x](javascript:alert(2))"))
	for _, want := range []string{"<h3", "Så gör du</h3>", "<h4", "<h6"} {
		if !strings.Contains(html, want) {
			t.Errorf("usage HTML lacks %q:\n%s", want, html)
		}
	}
	for _, bad := range []string{"<h1", "<h2", "<script", "javascript:"} {
		if strings.Contains(html, bad) {
			t.Errorf("usage HTML keeps %q:\n%s", bad, html)
		}
	}
}

func TestControlKeysOfUnusualNames(t *testing.T) {
	schema := contract.InputSchema{
		{Field: contract.Field{Name: "klass lista", Label: "Klass", Kind: contract.FieldString}},
		{Field: contract.Field{Name: `säg "hej"`, Label: "Hälsning", Kind: contract.FieldBoolean}},
		{Field: contract.Field{Name: "plain_name-2", Label: "P", Kind: contract.FieldString}},
	}
	f := newRunForm(schema, "", "Välj filer", "(inget valt)", upload.DefaultLimits())
	if f.Fields[0].ID != "in-~0" || f.Fields[0].Input != "in.~0" || f.Fields[1].Input != "in.~1" || f.Fields[2].ID != "in-plain_name-2" {
		t.Fatalf("controls: %q %q %q %q", f.Fields[0].ID, f.Fields[0].Input, f.Fields[1].Input, f.Fields[2].ID)
	}
	in := f.inputs(map[string]string{"in.~0": "7B", "in.~1": "true"})
	if !reflect.DeepEqual(in, map[string]any{"klass lista": "7B", `säg "hej"`: true}) {
		t.Fatalf("inputs = %#v", in)
	}
	f.refuse("klass lista", "no")
	if f.Fields[0].Error != "no" {
		t.Fatal("a refusal naming an unusual field did not land beside it")
	}
	set := settingsValues(contract.SettingsSchema{{Name: "två ord", Label: "T", Kind: contract.FieldString}}, url.Values{"set.~0": {"ja"}})
	if set["två ord"] != "ja" {
		t.Fatalf("settings = %#v", set)
	}
}

// TestFileSlotWhereTheSchemaPutsIt: the run form shows its fields in the schema's order,
// the file slot included, so a tool whose instructions begin "1. Ladda upp en
// klasslista" has its file slot first.
func TestFileSlotWhereTheSchemaPutsIt(t *testing.T) {
	c, err := loadCatalogue(assets)
	if err != nil {
		t.Fatal(err)
	}
	partials, _ := fs.Glob(assets, "templates/part_*.html")
	tmpl, err := template.New("form").Funcs(funcsFor(c.lang("sv"))).ParseFS(assets, partials...)
	if err != nil {
		t.Fatal(err)
	}
	file := contract.InputField{Field: contract.Field{Name: "klasslista", Label: "Klasslista", Kind: contract.FieldFile}, Accept: []string{".csv"}, Min: intp(1), Max: intp(1)}
	size := contract.InputField{Field: contract.Field{Name: "size", Label: "Gruppstorlek", Kind: contract.FieldInteger}}
	name := contract.InputField{Field: contract.Field{Name: "name", Label: "Namn", Kind: contract.FieldString}}
	lim := upload.Limits{MaxFiles: 20, MaxFileBytes: 200_000, MaxTotalBytes: 1_000_000}
	for _, c := range []struct {
		schema contract.InputSchema
		want   []string
	}{
		{contract.InputSchema{file, size, name}, []string{`name="files"`, `name="in.size"`, `name="in.name"`}},
		{contract.InputSchema{size, file, name}, []string{`name="in.size"`, `name="files"`, `name="in.name"`}},
		{contract.InputSchema{size, name, file}, []string{`name="in.size"`, `name="in.name"`, `name="files"`}},
		{nil, []string{`name="files"`}},
	} {
		var b strings.Builder
		if err := tmpl.ExecuteTemplate(&b, "upload", newRunForm(c.schema, "", "Välj filer", "(inget valt)", lim)); err != nil {
			t.Fatal(err)
		}
		html, at := b.String(), -1
		for _, w := range c.want {
			i := strings.Index(html, w)
			if i <= at || strings.Count(html, w) != 1 {
				t.Fatalf("schema %v: %s is not once and after the fields before it in the schema:\n%s", c.schema, w, html)
			}
			at = i
		}
	}
}
