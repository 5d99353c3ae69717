package contract

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestOutputJSON(t *testing.T) {
	tests := []struct {
		name string
		out  Output
		want string
	}{
		{"notice", Notice(LevelInfo, "%d files", 3), `{"kind":"notice","level":"info","message":"3 files"}`},
		{"markdown", Output{Kind: KindMarkdown, Markdown: "# Hi", Title: "ignored"}, `{"kind":"markdown","markdown":"# Hi"}`},
		{"table", Output{Kind: KindTable, Title: "Files", Columns: []Column{{"name", "Namn"}, {"bytes", "Storlek"}},
			Rows: []map[string]any{{"name": "a.html", "bytes": json.Number("12")}}},
			`{"kind":"table","title":"Files","columns":[{"key":"name","label":"Namn"},{"key":"bytes","label":"Storlek"}],"rows":[{"bytes":12,"name":"a.html"}]}`},
		{"empty table", Output{Kind: KindTable}, `{"kind":"table","columns":[],"rows":[]}`},
		{"json", Output{Kind: KindJSON, Value: map[string]any{"big": json.Number("12345678901234567890"), "l": []any{true, nil}}},
			`{"kind":"json","value":{"big":12345678901234567890,"l":[true,null]}}`},
		{"json with title and null value", Output{Kind: KindJSON, Title: "T"}, `{"kind":"json","title":"T","value":null}`},
		{"html", Output{Kind: KindHTML, HTML: "<p>x</p>", Markdown: "ignored"}, `{"kind":"html_sandboxed","html":"\u003cp\u003ex\u003c/p\u003e"}`},
		{"vega", Output{Kind: KindVegaLite, Spec: map[string]any{"mark": "bar"}}, `{"kind":"vega_lite","spec":{"mark":"bar"}}`},
		{"unknown kind", Output{Kind: "image", HTML: "x"}, `{"kind":"image"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.out)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("Marshal = %s\nwant      %s", b, tc.want)
			}
			var back Output
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("Unmarshal(%s): %v", b, err)
			}
			b2, _ := json.Marshal(back)
			if string(b2) != tc.want {
				t.Fatalf("round trip = %s\nwant         %s", b2, tc.want)
			}
		})
	}
}

func TestOutputUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    Output
		wantErr bool
	}{
		{`{"kind":"notice","level":"warning","message":"m","markdown":5}`, Output{Kind: KindNotice, Level: LevelWarning, Message: "m"}, false},
		{`{"kind":"markdown","markdown":"x","html":"y","value":[1]}`, Output{Kind: KindMarkdown, Markdown: "x"}, false},
		{`{"kind":"json","value":7}`, Output{Kind: KindJSON, Value: json.Number("7")}, false},
		{`{"kind":"vega_lite","spec":{"a":1.5}}`, Output{Kind: KindVegaLite, Spec: map[string]any{"a": json.Number("1.5")}}, false},
		{`{"kind":"image","src":"x"}`, Output{Kind: "image"}, false},
		{`{}`, Output{}, false},
		{`{"kind":"notice","message":5}`, Output{}, true},
		{`{"kind":"table","rows":"x"}`, Output{}, true},
		{`{"kind":"table","rows":[1]}`, Output{}, true},
		{`{"kind":3}`, Output{}, true},
		{`"markdown"`, Output{}, true},
	}
	for _, tc := range tests {
		var got Output
		err := json.Unmarshal([]byte(tc.in), &got)
		if (err != nil) != tc.wantErr {
			t.Errorf("Unmarshal(%s) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Unmarshal(%s) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}
