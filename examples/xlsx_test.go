package examples_test

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
)

// sheet is one worksheet of a workbook made by xlsx: rows of strings and numbers.
type sheet struct {
	name string
	rows [][]any
}

// xlsx builds the smallest .xlsx workbook Excel and openpyxl open: the package parts, a
// workbook listing the sheets, and each sheet with strings inline (no shared strings).
func xlsx(t *testing.T, sheets ...sheet) []byte {
	t.Helper()
	const (
		ns    = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
		rel   = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
		pkg   = "http://schemas.openxmlformats.org/package/2006/relationships"
		xhead = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"
	)
	esc := func(s string) string {
		var b bytes.Buffer
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	parts := map[string]string{}
	var types, list, rels strings.Builder
	for i, s := range sheets {
		n := i + 1
		fmt.Fprintf(&types, `<Override PartName="/xl/worksheets/sheet%d.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`, n)
		fmt.Fprintf(&list, `<sheet name="%s" sheetId="%d" r:id="rId%d"/>`, esc(s.name), n, n)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="%s/worksheet" Target="worksheets/sheet%d.xml"/>`, n, rel, n)
		var data strings.Builder
		for r, row := range s.rows {
			fmt.Fprintf(&data, `<row r="%d">`, r+1)
			for c, v := range row {
				ref := fmt.Sprintf("%c%d", 'A'+c, r+1)
				switch v := v.(type) {
				case string:
					fmt.Fprintf(&data, `<c r="%s" t="inlineStr"><is><t>%s</t></is></c>`, ref, esc(v))
				case int, float64:
					fmt.Fprintf(&data, `<c r="%s"><v>%v</v></c>`, ref, v)
				default:
					t.Fatalf("xlsx: a cell of type %T", v)
				}
			}
			data.WriteString(`</row>`)
		}
		parts[fmt.Sprintf("xl/worksheets/sheet%d.xml", n)] = xhead + `<worksheet xmlns="` + ns + `"><sheetData>` + data.String() + `</sheetData></worksheet>`
	}
	parts["[Content_Types].xml"] = xhead + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
		`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
		`<Default Extension="xml" ContentType="application/xml"/>` +
		`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
		types.String() + `</Types>`
	parts["_rels/.rels"] = xhead + `<Relationships xmlns="` + pkg + `">` +
		`<Relationship Id="rId1" Type="` + rel + `/officeDocument" Target="xl/workbook.xml"/></Relationships>`
	parts["xl/workbook.xml"] = xhead + `<workbook xmlns="` + ns + `" xmlns:r="` + rel + `"><sheets>` + list.String() + `</sheets></workbook>`
	parts["xl/_rels/workbook.xml.rels"] = xhead + `<Relationships xmlns="` + pkg + `">` + rels.String() + `</Relationships>`

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels"} {
		w, _ := zw.Create(name)
		w.Write([]byte(parts[name]))
		delete(parts, name)
	}
	for i := range sheets {
		name := fmt.Sprintf("xl/worksheets/sheet%d.xml", i+1)
		w, _ := zw.Create(name)
		w.Write([]byte(parts[name]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
