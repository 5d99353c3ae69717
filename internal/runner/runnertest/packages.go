package runnertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/runner"
)

// runtimeTool uses every part of the runtime docs/spec.md §5b promises, the way tools do, and
// reports what it saw: each module's import, pandoc through pypandoc (markdown to .docx,
// read back with python-docx), rsvg-convert (SVG to PNG), openpyxl and pandas (an .xlsx
// written and read back), Jinja2 and WeasyPrint (a PDF in each font family, read back with
// pypdf) and fontconfig's list of families.
const runtimeTool = `
import os, subprocess, sys

def run_tool(input_dir, output_dir):
    import weasyprint, docx, openpyxl, pandas, pypdf, jinja2, pypandoc, yaml, pydantic, structlog
    from weasyprint import DEFAULT_OPTIONS
    res = {"python": list(sys.version_info[:2]), "default_options": isinstance(DEFAULT_OPTIONS, dict)}

    res["pandoc"] = subprocess.run(["pandoc", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    docx_path = os.path.join(output_dir, "notes.docx")
    pypandoc.convert_text("# Rubrik\n\nHej *världen*.\n", "docx", format="md", outputfile=docx_path)
    res["docx"] = [p.text for p in docx.Document(docx_path).paragraphs]

    res["rsvg"] = subprocess.run(["rsvg-convert", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="8" height="6"><rect width="8" height="6" fill="red"/></svg>'
    png = subprocess.run(["rsvg-convert", "--format", "png"], input=svg, capture_output=True, check=True).stdout
    res["png"] = [png[:8].hex(), int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")]

    wb = openpyxl.Workbook()
    wb.active.append(["namn", "poäng"])
    wb.active.append(["Ada", 3])
    wb.active.append(["Bo", 4])
    xlsx = os.path.join(output_dir, "scores.xlsx")
    wb.save(xlsx)
    df = pandas.read_excel(xlsx)
    res["xlsx"] = [list(df.columns), int(df["poäng"].sum())]

    families = ["Liberation Serif", "DejaVu Sans", "FreeSerif", "Noto Sans"]
    html = jinja2.Template("{% for f in fams %}<p style=\"font-family: '{{ f }}'\">{{ f }} åäö</p>{% endfor %}").render(fams=families)
    pdf = os.path.join(output_dir, "fonts.pdf")
    weasyprint.HTML(string=html).write_pdf(pdf)
    page = pypdf.PdfReader(pdf).pages[0]
    res["pdf_text"] = page.extract_text()
    fonts = page["/Resources"]["/Font"]
    res["pdf_fonts"] = sorted(str(fonts[k].get_object()["/BaseFont"]) for k in fonts)

    res["fc_list"] = sorted(set(subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True, check=True).stdout.split("\n")))
    return {"outputs": [{"kind": "json", "value": res}]}
`

// RuntimePackages runs a tool that uses the whole runtime of docs/spec.md §5b on r (Python 3.13,
// WeasyPrint, pandoc and pypandoc, python-docx, openpyxl, pandas, pypdf, Jinja2,
// rsvg-convert and the Liberation 2, DejaVu, FreeFont and Noto fonts) and checks what
// each part produced. r must use the runner rootfs (or the image made from it).
func RuntimePackages(t *testing.T, r runner.Runner) {
	lim := Limits()
	// A tool's production limits but for the wall time: pandas, pandoc and WeasyPrint in one
	// run need more than the suite's small ones.
	lim.WallTime, lim.MemoryBytes, lim.TmpBytes, lim.OutputBytes = 90*time.Second, 1<<30, 256<<20, 100<<20
	t.Run("pandoc 3.8 options", func(t *testing.T) { testPandocOptions(t, r) })
	o := Exec(t, r, runtimeTool, nil, nil, lim)
	v := jsonValue(t, o)
	if fmt.Sprint(v["python"]) != "[3 13]" || v["default_options"] != true {
		t.Errorf("python %v, weasyprint.DEFAULT_OPTIONS a dict: %v", v["python"], v["default_options"])
	}
	if p, _ := v["pandoc"].(string); !strings.HasPrefix(p, "pandoc 3.") {
		t.Errorf("pandoc --version: %q", p)
	}
	if fmt.Sprint(v["docx"]) != "[Rubrik Hej världen.]" {
		t.Errorf("the .docx pandoc made reads back as %v", v["docx"])
	}
	if rs, _ := v["rsvg"].(string); !strings.HasPrefix(rs, "rsvg-convert version 2.") {
		t.Errorf("rsvg-convert --version: %q", rs)
	}
	if fmt.Sprint(v["png"]) != "[89504e470d0a1a0a 8 6]" {
		t.Errorf("rsvg-convert's PNG (signature, width, height): %v", v["png"])
	}
	if fmt.Sprint(v["xlsx"]) != "[[namn poäng] 7]" {
		t.Errorf("the .xlsx read back by pandas: %v", v["xlsx"])
	}
	text, _ := v["pdf_text"].(string)
	// Embedded fonts are named "/ABCDEF+Liberation-Serif": a subset tag, then the name.
	fonts := strings.NewReplacer("-", "", " ", "").Replace(fmt.Sprint(v["pdf_fonts"]))
	families := fmt.Sprint(v["fc_list"])
	for _, family := range []string{"Liberation Serif", "DejaVu Sans", "FreeSerif", "Noto Sans"} {
		if !strings.Contains(text, family) {
			t.Errorf("the PDF's text lacks %q: %q", family, text)
		}
		if !strings.Contains(fonts, "+"+strings.ReplaceAll(family, " ", "")) {
			t.Errorf("WeasyPrint did not embed %s (it embedded %v)", family, v["pdf_fonts"])
		}
		if !strings.Contains(families, family) {
			t.Errorf("fc-list does not know %s", family)
		}
	}
	for _, name := range []string{"notes.docx", "scores.xlsx", "fonts.pdf"} {
		if !strings.HasPrefix(o.Files[name], "file:") {
			t.Errorf("artifact %s: %q", name, o.Files[name])
		}
	}
}

// pandocTool calls pandoc with the options of pandoc 3.8 that the original hub's tools
// use, as they do: on the command line, in both spellings, and through pypandoc.
const pandocTool = `
import subprocess, pypandoc

MD = "# Kod\n\n` + "```" + `python\ndef f(x):\n    return x\n` + "```" + `\n"

def pandoc(*args):
    p = subprocess.run(["pandoc", "-f", "markdown", *args], input=MD, capture_output=True, text=True)
    return {"code": p.returncode, "out": p.stdout, "err": p.stderr}

def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "json", "value": {
        "version": pandoc("--version")["out"].splitlines()[0],
        "plain": pandoc("-t", "html"),
        "none": pandoc("-t", "html", "--syntax-highlighting=none"),
        "none_apart": pandoc("-t", "html", "--syntax-highlighting", "none"),
        "default": pandoc("-t", "html", "-s", "--syntax-highlighting=default"),
        "tango": pandoc("-t", "html", "-s", "--syntax-highlighting=tango"),
        "tango_apart": pandoc("-t", "html", "-s", "--syntax-highlighting", "tango"),
        "idiomatic": pandoc("-t", "latex", "--syntax-highlighting=idiomatic"),
        "unknown": pandoc("-t", "html", "--syntax-highlighting=nosuchstyle"),
        "pypandoc": pypandoc.convert_text(MD, "html", format="md", extra_args=["-s", "--syntax-highlighting=tango"]),
    }}]}
`

// testPandocOptions: pandoc 3.8's --syntax-highlighting works on the runtime's pandoc 3.1
// through skrip's wrapper, and pandoc's output and exit code reach the tool unchanged.
func testPandocOptions(t *testing.T, r runner.Runner) {
	lim := Limits()
	lim.WallTime, lim.MemoryBytes = 60*time.Second, 1<<30
	v := jsonValue(t, Exec(t, r, pandocTool, nil, nil, lim))
	if p, _ := v["version"].(string); !strings.HasPrefix(p, "pandoc 3.") {
		t.Errorf("pandoc --version through the wrapper: %q", p)
	}
	run := func(name string) (code float64, out, errOut string) {
		m, _ := v[name].(map[string]any)
		code, _ = m["code"].(float64)
		out, _ = m["out"].(string)
		errOut, _ = m["err"].(string)
		return code, out, errOut
	}
	// Tango's keyword colour, and pygments' (pandoc's default style).
	const tango, pygments = "#204a87", "#007020"
	for name, want := range map[string]struct {
		spans       bool   // highlighted: <span class="kw">
		colour, not string // in the style sheet
	}{
		"plain":       {spans: true},
		"none":        {spans: false},
		"none_apart":  {spans: false},
		"default":     {spans: true, colour: pygments, not: tango},
		"tango":       {spans: true, colour: tango, not: pygments},
		"tango_apart": {spans: true, colour: tango, not: pygments},
	} {
		code, out, errOut := run(name)
		if code != 0 || !strings.Contains(out, "f(x)") {
			t.Errorf("%s: exit %v, output %.300q, stderr %q", name, code, out, errOut)
			continue
		}
		if strings.Contains(out, `class="kw"`) != want.spans {
			t.Errorf("%s: highlighted %v, want %v: %.300q", name, !want.spans, want.spans, out)
		}
		if want.colour != "" && (!strings.Contains(out, want.colour) || strings.Contains(out, want.not)) {
			t.Errorf("%s: the style sheet lacks %s or has %s", name, want.colour, want.not)
		}
	}
	if code, out, errOut := run("idiomatic"); code != 0 || !strings.Contains(out, `\begin{lstlisting}`) {
		t.Errorf("idiomatic (LaTeX listings): exit %v, output %.300q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := run("unknown"); code == 0 || !strings.Contains(errOut, "nosuchstyle") {
		t.Errorf("an unknown style: exit %v, stderr %q; want pandoc's own failure", code, errOut)
	}
	if p, _ := v["pypandoc"].(string); !strings.Contains(p, tango) || !strings.Contains(p, `class="kw"`) {
		t.Errorf("pypandoc with --syntax-highlighting=tango: %.300q", p)
	}
}
