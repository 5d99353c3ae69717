package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// funcsFor are the templates' functions in language l.
func funcsFor(l *Lang) template.FuncMap {
	return template.FuncMap{
		"t":     l.T,
		"size":  l.Size,
		"ago":   func(t time.Time) string { return l.Ago(t, time.Now()) },
		"until": func(t time.Time) string { return l.Until(t, time.Now()) },
		"agoPtr": func(t *time.Time) string {
			if t == nil {
				return ""
			}
			return l.Ago(*t, time.Now())
		},
		"stamp":   l.Stamp,
		"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"status":  l.Status,
		"done":    store.Terminal,
		"ctxName": func(text string) string { return contextName(l, text) },
		"keyURL":  httpkit.FileURL,
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
	}
}

// Size formats a byte count in decimal units with at most one decimal, as "12.3 MB" or
// "20 MB"; under a kilobyte, as bytes ("512 bytes"). Written here because go-humanize rounds to whole
// units ("12 MB").
func Size(n int64) string {
	if n < 1000 {
		if n == 1 {
			return "1 byte"
		}
		return strconv.FormatInt(n, 10) + " bytes"
	}
	units := []string{"kB", "MB", "GB", "TB", "PB", "EB"}
	v, i := float64(n)/1000, 0
	for v >= 999.95 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return strings.TrimSuffix(strconv.FormatFloat(math.Round(v*10)/10, 'f', 1, 64), ".0") + " " + units[i]
}

// contextName is what a run list says in l about a run's session context: nothing in
// production.
func contextName(l *Lang, text string) string {
	if c, err := session.ParseContext(text); err == nil && c.IsEditor() {
		return l.T("run.editor_context")
	}
	return ""
}

// output is one run output ready for a template.
type output struct {
	Kind    string
	Level   string
	Message string
	HTML    template.HTML // markdown, rendered and sanitised
	Title   string
	Columns []contract.Column
	Rows    [][]string
	JSON    string        // json value or vega_lite spec, indented
	Chart   template.HTML // a vega_lite spec drawn as SVG (chart.go); empty when it is not one drawn
	Index   int           // position among the run's outputs, for the html_sandboxed frame's URL
	// Reason and Params: a notice of skrip's own, said in the page's language
	// (sayNotices) rather than by its English Message.
	Reason string
	Params map[string]string
}

// noticePrefix is where the catalogues keep skrip's own notices (TestCatalogues checks
// one for each reason).
const noticePrefix = "run.notice_reason."

// sayNotices puts skrip's own notices among outs in l's words, from their reasons and
// parameters; a reason l has no message for keeps its English sentence.
func sayNotices(l *Lang, outs []output) {
	for i, o := range outs {
		if o.Kind != contract.KindNotice || o.Reason == "" || !l.Has(noticePrefix+o.Reason) {
			continue
		}
		args := make([]any, 0, 2*len(o.Params))
		for k, v := range o.Params {
			args = append(args, reasonParam(k), v)
		}
		outs[i].Message = l.T(noticePrefix+o.Reason, args...)
	}
}

var (
	// markdown renders a tool's markdown output, which sits under the page's <h1> (the
	// tool's title): a "# Heading" in it becomes an <h2>, so the page keeps one <h1>.
	markdown = goldmark.New(goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(headingShift(1), 100))))
	// sanitiser keeps what user-generated markdown may hold and nothing that runs.
	sanitiser = bluemonday.UGCPolicy()
)

// renderMarkdown turns markdown into HTML that is safe to put in the page.
func renderMarkdown(src string) template.HTML {
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(src), &buf); err != nil {
		return template.HTML(template.HTMLEscapeString(src))
	}
	return template.HTML(sanitiser.SanitizeBytes(buf.Bytes()))
}

// usageMarkdown renders a tool's usage instructions, which sit under the page's own
// headings: a "# Heading" in them becomes an <h3>, so the page keeps one <h1>.
var usageMarkdown = goldmark.New(goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(headingShift(2), 100))))

// headingShift moves every heading down by n levels, to at most <h6>.
type headingShift int

func (n headingShift) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	ast.Walk(doc, func(node ast.Node, entering bool) (ast.WalkStatus, error) {
		if h, ok := node.(*ast.Heading); ok && entering {
			h.Level = min(h.Level+int(n), 6)
		}
		return ast.WalkContinue, nil
	})
}

// renderUsage turns usage instructions into HTML that is safe to put in the page.
func renderUsage(src string) template.HTML {
	var buf bytes.Buffer
	if err := usageMarkdown.Convert([]byte(src), &buf); err != nil {
		return template.HTML(template.HTMLEscapeString(src))
	}
	return template.HTML(sanitiser.SanitizeBytes(buf.Bytes()))
}

// outputs decodes a run's outputs for the page.
func outputs(r store.Run) []output {
	outs, err := run.OutputsOf(r)
	if err != nil {
		return []output{{Kind: contract.KindNotice, Level: contract.LevelError, Message: "The outputs of this run could not be read.", Reason: "unreadable"}}
	}
	view := make([]output, 0, len(outs))
	for i, o := range outs {
		v := output{Kind: o.Kind, Level: o.Level, Message: o.Message, Title: o.Title, Columns: o.Columns, Index: i, Reason: o.Reason, Params: o.Params}
		switch o.Kind {
		case contract.KindMarkdown:
			v.HTML = renderMarkdown(o.Markdown)
		case contract.KindTable:
			for _, row := range o.Rows {
				cells := make([]string, len(o.Columns))
				for j, c := range o.Columns {
					cells[j] = cell(row[c.Key])
				}
				v.Rows = append(v.Rows, cells)
			}
		case contract.KindJSON:
			v.JSON = indent(o.Value)
		case contract.KindVegaLite:
			v.JSON = indent(o.Spec)
			if svg, title, ok := drawChart(o.Spec); ok {
				v.Chart, v.Title = svg, title
			}
		}
		view = append(view, v)
	}
	return view
}

// cell shows one table value: strings as they are, numbers and booleans as JSON writes
// them, nothing for null, and anything else as compact JSON.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func indent(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// artifact is one file a run left: downloadable until the janitor expires it, then
// only named, with when it expired.
type artifact struct {
	Name    string
	Bytes   int64
	URL     string
	Expired *time.Time
}

func artifacts(r store.Run) ([]artifact, error) {
	arts, err := run.ArtifactsOf(r)
	out := make([]artifact, 0, len(arts))
	for _, a := range arts {
		out = append(out, artifact{Name: a.Name, Bytes: a.Bytes, URL: httpkit.ArtifactURL(r.ID, a.Path), Expired: a.ExpiredAt})
	}
	return out, err
}

// action is one next action ready for a form.
type action struct {
	ID     string
	Label  string
	Fields []formField
}

func actions(r store.Run) ([]action, error) {
	next, err := run.NextActionsOf(r)
	if err != nil {
		return nil, err
	}
	out := make([]action, 0, len(next))
	for i, a := range next {
		v := action{ID: a.ActionID, Label: a.Label, Fields: newFields(a.Fields, "f-"+controlKey(i, a.ActionID), "in.")}
		for i := range v.Fields {
			v.Fields[i].fill(a.Prefill[v.Fields[i].Name])
		}
		out = append(out, v)
	}
	return out, nil
}

// formInput reads an action's input from a submitted form: each field by its kind,
// leaving out empty numbers and choices (missing fields are allowed) and reading an
// unticked checkbox as false.
func formInput(a contract.NextAction, form map[string][]string) (map[string]any, error) {
	in := map[string]any{}
	for i, f := range a.Fields {
		vals := form["in."+controlKey(i, f.Name)]
		first := ""
		if len(vals) > 0 {
			first = vals[0]
		}
		switch f.Kind {
		case contract.FieldBoolean:
			in[f.Name] = formBool(first)
		case contract.FieldMultiEnum:
			list := make([]any, 0, len(vals))
			for _, v := range vals {
				list = append(list, v)
			}
			in[f.Name] = list
		case contract.FieldInteger:
			if strings.TrimSpace(first) == "" {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSpace(first), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s must be a whole number, such as 3; %q is not", f.Label, first)
			}
			in[f.Name] = n
		case contract.FieldNumber:
			if strings.TrimSpace(first) == "" {
				continue
			}
			n, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(first), ",", "."), 64)
			if err != nil {
				return nil, fmt.Errorf("%s must be a number, such as 2.5; %q is not", f.Label, first)
			}
			in[f.Name] = n
		case contract.FieldEnum:
			if first == "" {
				continue
			}
			in[f.Name] = first
		default:
			if len(vals) > 0 {
				in[f.Name] = first
			}
		}
	}
	return in, nil
}
