package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// decodeSpec decodes a spec as the run record hands it over (numbers as json.Number).
func decodeSpec(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDrawChart: simple bar, line and point specs over inline values are drawn, with
// their text escaped and every datum placed; anything it cannot draw faithfully falls
// back to the spec.
func TestDrawChart(t *testing.T) {
	bar := `{"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "title": "Betyg <i>per</i> klass",
		"data": {"values": [{"klass": "7A", "antal": 12}, {"klass": "7B", "antal": 9}, {"klass": "<script>", "antal": 3}]},
		"mark": "bar", "encoding": {"x": {"field": "klass", "type": "nominal"}, "y": {"field": "antal", "type": "quantitative", "title": "Antal elever"}}}`
	svg, title, ok := drawChart(decodeSpec(t, bar))
	if !ok {
		t.Fatal("a plain bar chart was not drawn")
	}
	s := string(svg)
	if title != "Betyg <i>per</i> klass" || strings.Count(s, "<rect") != 3 {
		t.Errorf("title %q, %d bars:\n%s", title, strings.Count(s, "<rect"), s)
	}
	for _, want := range []string{"&lt;script&gt;", "Antal elever", "&lt;i&gt;per&lt;/i&gt;", `role="img"`, ">7A<", ">0<"} {
		if !strings.Contains(s, want) {
			t.Errorf("the bar chart lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "<script>") || strings.Contains(s, "<i>") {
		t.Errorf("text in the SVG is not escaped:\n%s", s)
	}

	line := `{"data": {"values": [{"v": 1, "t": 3}, {"v": 2, "t": 1}, {"v": 3, "t": 2}, {"v": "x", "t": 4}]},
		"mark": {"type": "line"}, "encoding": {"x": {"field": "t", "type": "quantitative"}, "y": {"field": "v", "type": "quantitative"}}}`
	svg, _, ok = drawChart(decodeSpec(t, line))
	if !ok || !strings.Contains(string(svg), "<polyline") || strings.Count(string(svg), "<circle") != 3 {
		t.Errorf("the line chart (a datum without a number left out): drawn %v\n%s", ok, svg)
	}

	point := `{"data": {"values": [{"a": 1.5, "b": -2}, {"a": 2.5, "b": 4}]}, "mark": "point",
		"encoding": {"x": {"field": "a", "type": "quantitative"}, "y": {"field": "b", "type": "quantitative"}}}`
	if svg, _, ok = drawChart(decodeSpec(t, point)); !ok || strings.Count(string(svg), "<circle") != 2 {
		t.Errorf("the scatter chart: drawn %v\n%s", ok, svg)
	}

	sideways := `{"data": {"values": [{"n": "Ada", "p": 5}]}, "mark": "bar",
		"encoding": {"y": {"field": "n", "type": "ordinal"}, "x": {"field": "p", "type": "quantitative"}}}`
	if _, _, ok = drawChart(decodeSpec(t, sideways)); !ok {
		t.Error("a horizontal bar chart was not drawn")
	}

	// Categories in ascending order by default, as Vega-Lite sorts them; in the data's
	// order with "sort": null; the first at the top of a y axis.
	order := func(sort string) []string {
		spec := `{"data": {"values": [{"d": "mån", "n": 1}, {"d": "tis", "n": 2}, {"d": "ons", "n": 3}]}, "mark": "bar",
			"encoding": {"x": {"field": "d", "type": "nominal"` + sort + `}, "y": {"field": "n", "type": "quantitative"}}}`
		c, ok := readChart([]byte(spec))
		if !ok {
			t.Fatalf("not drawn with sort %q", sort)
		}
		return c.x.bands
	}
	for sort, want := range map[string]string{"": "mån ons tis", `, "sort": null`: "mån tis ons", `, "sort": "descending"`: "tis ons mån"} {
		if got := strings.Join(order(sort), " "); got != want {
			t.Errorf("with sort %q the days are %q; want %q", sort, got, want)
		}
	}
	c, ok := readChart([]byte(`{"data": {"values": [{"n": "Ada", "p": 5}, {"n": "Bo", "p": 3}]}, "mark": "bar",
		"encoding": {"y": {"field": "n", "type": "nominal"}, "x": {"field": "p", "type": "quantitative"}}}`))
	if !ok || c.y.pos("Ada") <= c.y.pos("Bo") {
		t.Errorf("on a y axis the first category is not at the top (drawn %v)", ok)
	}

	var many strings.Builder
	many.WriteString(`{"data": {"values": [`)
	for i := range maxChartPoints + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"x": %d, "y": %d}`, i, i)
	}
	many.WriteString(`]}, "mark": "point", "encoding": {"x": {"field": "x", "type": "quantitative"}, "y": {"field": "y", "type": "quantitative"}}}`)

	for name, spec := range map[string]string{
		"a data URL":         `{"data": {"url": "data.csv"}, "mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}`,
		"an area mark":       `{"data": {"values": [{"a": 1, "b": 2}]}, "mark": "area", "encoding": {"x": {"field": "a", "type": "quantitative"}, "y": {"field": "b", "type": "quantitative"}}}`,
		"a colour channel":   `{"data": {"values": [{"a": "x", "b": 2, "c": "k"}]}, "mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}, "color": {"field": "c", "type": "nominal"}}}`,
		"an aggregate":       `{"data": {"values": [{"a": "x", "b": 2}]}, "mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative", "aggregate": "sum"}}}`,
		"a transform":        `{"data": {"values": [{"a": "x", "b": 2}]}, "transform": [{"filter": "datum.b > 1"}], "mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}`,
		"a layer":            `{"layer": [], "data": {"values": [{"a": 1}]}}`,
		"dates":              `{"data": {"values": [{"a": "2024-01-01", "b": 2}]}, "mark": "line", "encoding": {"x": {"field": "a", "type": "temporal"}, "y": {"field": "b", "type": "quantitative"}}}`,
		"two measures' bars": `{"data": {"values": [{"a": 1, "b": 2}]}, "mark": "bar", "encoding": {"x": {"field": "a", "type": "quantitative"}, "y": {"field": "b", "type": "quantitative"}}}`,
		"no usable datum":    `{"data": {"values": [{"a": "x", "b": "many"}]}, "mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}`,
		"no y":               `{"data": {"values": [{"a": 1}]}, "mark": "point", "encoding": {"x": {"field": "a", "type": "quantitative"}}}`,
		"over the cap":       many.String(),
		"not an object":      `[1, 2]`,
		"a sort by a field":  `{"data": {"values": [{"a": "x", "b": 2}]}, "mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal", "sort": "-y"}, "y": {"field": "b", "type": "quantitative"}}}`,
	} {
		if _, _, ok := drawChart(decodeSpec(t, spec)); ok {
			t.Errorf("%s was drawn; want the spec shown instead", name)
		}
	}
}

func TestNiceStep(t *testing.T) {
	for _, c := range []struct{ span, want float64 }{{10, 2}, {1, 0.2}, {100, 20}, {7, 2}, {30, 10}, {0.05, 0.01}} {
		if got := niceStep(c.span); fmt.Sprintf("%.6g", got) != fmt.Sprintf("%.6g", c.want) {
			t.Errorf("niceStep(%v) = %v; want %v", c.span, got, c.want)
		}
	}
}

// TestChartAtTheEndsOfFloat64: values whose span or step a float64 cannot hold are not
// drawn as NaN: the page shows the spec instead.
func TestChartAtTheEndsOfFloat64(t *testing.T) {
	for _, values := range []string{`[{"a": "x", "b": 1e308}, {"a": "y", "b": -1e308}]`, `[{"a": "x", "b": 5e-324}]`, `[{"a": "x", "b": 1e308}]`} {
		spec := `{"data": {"values": ` + values + `}, "mark": "bar", "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}`
		if svg, _, ok := drawChart(decodeSpec(t, spec)); ok && (strings.Contains(string(svg), "NaN") || strings.Contains(string(svg), "Inf")) {
			t.Errorf("%s drawn with NaN or Inf:\n%s", values, svg)
		}
	}
}
