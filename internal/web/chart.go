package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A tool's vega_lite output is drawn here, on the server, as SVG, when it is a simple
// chart: one bar, line or point mark over inline data.values, with an x and a y that
// are each a quantitative or a nominal (or ordinal) field. Anything else (transforms,
// layers, colour or size channels, aggregates, data from a URL, dates) is shown as its
// spec with a note, as before: a chart drawn only partly would mislead. Bounded: at most
// maxChartPoints data points and maxChartBands categories, and a fixed drawing size; all
// text in the SVG is escaped.

const (
	maxChartPoints = 2000
	maxChartBands  = 200
	chartW         = 640
	chartH         = 360
	padLeft        = 64 // before the widest category label on a category y axis
	padRight       = 16
	padTop         = 16
	padBottom      = 56
	maxLabelRunes  = 18
)

// vlSpec is the part of a Vega-Lite spec drawChart reads.
type vlSpec struct {
	Schema      string          `json:"$schema"`
	Title       json.RawMessage `json:"title"`
	Description string          `json:"description"`
	Mark        json.RawMessage `json:"mark"`
	Data        *struct {
		Values []map[string]any `json:"values"`
	} `json:"data"`
	Encoding map[string]*vlChannel `json:"encoding"`
}

type vlChannel struct {
	Field string          `json:"field"`
	Type  string          `json:"type"`
	Title json.RawMessage `json:"title"`
	// Sort orders a category axis: absent or "ascending" (Vega-Lite's default),
	// "descending", or null for the data's order. Any other sort is not drawn.
	Sort json.RawMessage `json:"sort"`
}

// Keys a drawn spec may have: the rest change what is drawn, so they send it back to
// the JSON view. width, height, config and autosize change only how it looks.
var (
	chartKeys    = []string{"$schema", "title", "description", "mark", "data", "encoding", "width", "height", "config", "autosize", "background", "padding"}
	channelKeys  = []string{"field", "type", "title", "axis", "sort"}
	encodingKeys = []string{"x", "y", "tooltip"}
)

// chart is a spec ready to draw.
type chart struct {
	mark   string
	title  string
	x, y   axis
	points []point
}

// axis is one channel: its field, whether it is quantitative, and its label.
type axis struct {
	field, label string
	quant        bool
	sort         string   // "ascending", "descending" or "" (the data's order)
	bands        []string // the categories of a nominal axis, in order
	vertical     bool     // the y axis, whose first band is at the top
	min, max     float64  // the domain of a quantitative axis
}

// point is one datum: a number or a category index on each axis.
type point struct{ x, y float64 }

// drawChart returns spec (a vega_lite output's spec, as decoded) as an SVG chart, or
// false when it is not one drawChart draws.
func drawChart(spec any) (template.HTML, string, bool) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", "", false
	}
	c, ok := readChart(b)
	if !ok {
		return "", "", false
	}
	return c.svg(), c.title, true
}

// readChart reads a spec drawChart can draw.
func readChart(b []byte) (*chart, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return nil, false
	}
	for k := range top {
		if !slices.Contains(chartKeys, k) {
			return nil, false
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var s vlSpec
	if dec.Decode(&s) != nil || s.Data == nil || len(s.Data.Values) == 0 || len(s.Data.Values) > maxChartPoints {
		return nil, false
	}
	c := &chart{mark: markType(s.Mark), title: titleText(s.Title)}
	if c.mark != "bar" && c.mark != "line" && c.mark != "point" {
		return nil, false
	}
	var raw map[string]map[string]json.RawMessage
	json.Unmarshal(top["encoding"], &raw)
	for k, ch := range raw {
		if !slices.Contains(encodingKeys, k) {
			return nil, false
		}
		for ck := range ch {
			if k != "tooltip" && !slices.Contains(channelKeys, ck) {
				return nil, false
			}
		}
	}
	x, y := s.Encoding["x"], s.Encoding["y"]
	if x == nil || y == nil || x.Field == "" || y.Field == "" {
		return nil, false
	}
	var okX, okY bool
	if c.x, okX = newAxis(x); !okX {
		return nil, false
	}
	if c.y, okY = newAxis(y); !okY {
		return nil, false
	}
	c.y.vertical = true
	// A bar needs one category axis and one measure; a line a measure on y.
	if c.mark == "bar" && c.x.quant == c.y.quant || c.mark == "line" && !c.y.quant {
		return nil, false
	}
	if !c.read(s.Data.Values) {
		return nil, false
	}
	return c, true
}

// markType is a mark's type, written "bar" or {"type": "bar"}.
func markType(m json.RawMessage) string {
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	var o struct{ Type string }
	json.Unmarshal(m, &o)
	return o.Type
}

// titleText is a title, written "T" or {"text": "T"}.
func titleText(m json.RawMessage) string {
	var s string
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	var o struct{ Text string }
	json.Unmarshal(m, &o)
	return o.Text
}

func newAxis(ch *vlChannel) (axis, bool) {
	a := axis{field: ch.Field, label: ch.Field, sort: "ascending"}
	switch sort := strings.TrimSpace(string(ch.Sort)); sort {
	case "":
	case "null":
		a.sort = ""
	case `"ascending"`, `"descending"`:
		a.sort = strings.Trim(sort, `"`)
	default:
		return a, false
	}
	if t := titleText(ch.Title); t != "" {
		a.label = t
	}
	switch ch.Type {
	case "quantitative":
		a.quant = true
	case "nominal", "ordinal":
	default:
		return a, false
	}
	return a, true
}

// read places every datum that has both fields (a quantitative one a number), as
// Vega-Lite leaves out the others, and sets the axes' domains.
func (c *chart) read(values []map[string]any) bool {
	type datum struct {
		x, y any
	}
	var kept []datum
	for _, v := range values {
		x, y := c.x.value(v), c.y.value(v)
		if x != nil && y != nil {
			kept = append(kept, datum{x, y})
		}
	}
	if len(kept) == 0 {
		return false
	}
	for _, a := range []*axis{&c.x, &c.y} {
		if a.quant {
			a.min, a.max = math.Inf(1), math.Inf(-1)
		}
	}
	for _, d := range kept {
		c.x.add(d.x)
		c.y.add(d.y)
	}
	if len(c.x.bands) > maxChartBands || len(c.y.bands) > maxChartBands {
		return false
	}
	for _, a := range []*axis{&c.x, &c.y} {
		a.finish()
		if !a.drawable() {
			return false
		}
	}
	for _, d := range kept {
		p := point{c.x.pos(d.x), c.y.pos(d.y)}
		if !finite(p.x) || !finite(p.y) {
			return false
		}
		c.points = append(c.points, p)
	}
	if c.mark == "line" {
		slices.SortStableFunc(c.points, func(a, b point) int { return cmpFloat(a.x, b.x) })
	}
	return true
}

// value is datum v's value on a: a float64 for a quantitative axis, a string for a
// category; nil when it has none.
func (a *axis) value(v map[string]any) any {
	raw, ok := v[a.field]
	if !ok || raw == nil {
		return nil
	}
	if a.quant {
		var f float64
		var err error
		switch n := raw.(type) {
		case json.Number:
			f, err = n.Float64()
		default:
			return nil
		}
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil
		}
		return f
	}
	switch s := raw.(type) {
	case string:
		return s
	case json.Number:
		return s.String()
	case bool:
		return strconv.FormatBool(s)
	}
	return nil
}

func (a *axis) add(v any) {
	if a.quant {
		f := v.(float64)
		a.min, a.max = min(a.min, f), max(a.max, f)
		return
	}
	if s := v.(string); !slices.Contains(a.bands, s) {
		a.bands = append(a.bands, s)
	}
}

// finish sorts the categories as the spec asks (by default ascending, numbers as numbers) and
// gives a quantitative domain room: it takes in zero (as Vega-Lite's scales do unless
// told otherwise), rounds out to whole ticks, and is never empty.
func (a *axis) finish() {
	if !a.quant {
		if a.sort != "" {
			slices.SortStableFunc(a.bands, func(p, q string) int {
				fp, errP := strconv.ParseFloat(p, 64)
				fq, errQ := strconv.ParseFloat(q, 64)
				if errP == nil && errQ == nil {
					return cmpFloat(fp, fq)
				}
				return strings.Compare(p, q)
			})
		}
		if a.sort == "descending" {
			slices.Reverse(a.bands)
		}
		return
	}
	a.min, a.max = min(a.min, 0), max(a.max, 0)
	if a.min == a.max {
		a.min, a.max = a.min-1, a.max+1
	}
	step := niceStep(a.max - a.min)
	a.min, a.max = math.Floor(a.min/step)*step, math.Ceil(a.max/step)*step
}

// pos is v's position on a from 0 to 1: a category's is the middle of its band, the
// first band first (left on x, at the top on y, as Vega-Lite draws them).
func (a *axis) pos(v any) float64 {
	if a.quant {
		return (v.(float64) - a.min) / (a.max - a.min)
	}
	f := (float64(slices.Index(a.bands, v.(string))) + 0.5) / float64(len(a.bands))
	if a.vertical {
		return 1 - f
	}
	return f
}

// ticks are a quantitative axis's labelled values.
func (a *axis) ticks() []float64 {
	step := niceStep(a.max - a.min)
	var out []float64
	for v := a.min; v <= a.max+step/2 && len(out) < 20; v += step {
		out = append(out, v)
	}
	return out
}

// drawable says whether a's domain can be drawn: a quantitative one must be finite,
// not empty, with a step that is neither zero nor infinite (values near the ends of
// float64, 1e308 or 5e-324, give neither).
func (a *axis) drawable() bool {
	if !a.quant {
		return true
	}
	span := a.max - a.min
	step := niceStep(span)
	return finite(a.min) && finite(a.max) && finite(span) && span > 0 && finite(step) && step > 0
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// niceStep is a round step (1, 2 or 5 times a power of ten) giving about five ticks
// over span.
func niceStep(span float64) float64 {
	raw := span / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// number writes a tick's value briefly: no trailing zeros, and no float noise.
func number(v float64) string {
	if math.Abs(v) < 1e-9 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// short cuts a category's label to fit under its band.
func short(s string) string {
	r := []rune(s)
	if len(r) <= maxLabelRunes {
		return s
	}
	return string(r[:maxLabelRunes-1]) + "…"
}

func esc(s string) string { return template.HTMLEscapeString(s) }

// svg draws the chart: axes with their ticks and labels, then the marks.
func (c *chart) svg() template.HTML {
	// A category y axis makes room for its labels (about 7 px a letter at 12 px).
	padLeft := padLeft
	if !c.y.quant {
		for _, b := range c.y.bands {
			padLeft = max(padLeft, 24+7*len([]rune(short(b))))
		}
	}
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBottom)
	px := func(f float64) float64 { return float64(padLeft) + f*plotW }
	py := func(f float64) float64 { return padTop + (1-f)*plotH }
	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	label := c.title
	if label == "" {
		label = c.y.label + " / " + c.x.label
	}
	f(`<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH, esc(label))
	f(`<title>%s</title>`, esc(label))
	// Grid and ticks.
	f(`<g class="axis">`)
	if c.y.quant {
		for _, v := range c.y.ticks() {
			y := py((v - c.y.min) / (c.y.max - c.y.min))
			f(`<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padLeft, chartW-padRight, y, y)
			f(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, padLeft-6, y, esc(number(v)))
		}
	} else {
		every := max(1, len(c.y.bands)/20)
		for i, s := range c.y.bands {
			if i%every == 0 {
				f(`<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, padLeft-6, py(c.y.pos(s)), esc(short(s)))
			}
		}
	}
	if c.x.quant {
		for _, v := range c.x.ticks() {
			x := px((v - c.x.min) / (c.x.max - c.x.min))
			f(`<line class="grid" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, x, x, padTop, chartH-padBottom)
			f(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, chartH-padBottom+16, esc(number(v)))
		}
	} else {
		every := max(1, len(c.x.bands)/12)
		for i, s := range c.x.bands {
			if i%every == 0 {
				f(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, px(c.x.pos(s)), chartH-padBottom+16, esc(short(s)))
			}
		}
	}
	f(`<line class="base" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padLeft, chartW-padRight, chartH-padBottom, chartH-padBottom)
	f(`<line class="base" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padLeft, padLeft, padTop, chartH-padBottom)
	f(`<text class="label" x="%.1f" y="%d" text-anchor="middle">%s</text>`, px(0.5), chartH-12, esc(c.x.label))
	f(`<text class="label" x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`, py(0.5), py(0.5), esc(c.y.label))
	f(`</g><g class="marks mark-%s">`, c.mark)
	switch c.mark {
	case "bar":
		c.bars(&b, px, py, plotW, plotH)
	case "line":
		f(`<polyline points="`)
		for _, p := range c.points {
			f("%.1f,%.1f ", px(p.x), py(p.y))
		}
		f(`"/>`)
		if len(c.points) <= 100 {
			for _, p := range c.points {
				f(`<circle cx="%.1f" cy="%.1f" r="2.5"/>`, px(p.x), py(p.y))
			}
		}
	case "point":
		for _, p := range c.points {
			f(`<circle cx="%.1f" cy="%.1f" r="3.5"/>`, px(p.x), py(p.y))
		}
	}
	f(`</g></svg>`)
	return template.HTML(b.String())
}

// bars draws a bar from the zero line to each datum, upright over a category x axis,
// sideways over a category y axis.
func (c *chart) bars(b *strings.Builder, px, py func(float64) float64, plotW, plotH float64) {
	if !c.x.quant {
		w := plotW / float64(len(c.x.bands)) * 0.8
		zero := py(-c.y.min / (c.y.max - c.y.min))
		for _, p := range c.points {
			top := py(p.y)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, px(p.x)-w/2, min(top, zero), w, math.Abs(zero-top))
		}
		return
	}
	h := plotH / float64(len(c.y.bands)) * 0.8
	zero := px(-c.x.min / (c.x.max - c.x.min))
	for _, p := range c.points {
		end := px(p.x)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, min(end, zero), py(p.y)-h/2, math.Abs(end-zero), h)
	}
}
