package httpkit

import (
	"mime"
	"testing"
)

// TestContentDisposition checks both names of an attachment: the ASCII filename that
// curl -OJ reads, with anything else replaced and quotes and backslashes escaped, and
// filename*, from which Go's mime package (as browsers do) gets the whole name back.
func TestContentDisposition(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"report.csv", `attachment; filename="report.csv"; filename*=UTF-8''report.csv`},
		{"report 2024.csv", `attachment; filename="report 2024.csv"; filename*=UTF-8''report%202024.csv`},
		{"Betyg åk 9.pdf", `attachment; filename="Betyg _k 9.pdf"; filename*=UTF-8''Betyg%20%C3%A5k%209.pdf`},
		{"Räksmörgås.txt", `attachment; filename="R_ksm_rg_s.txt"; filename*=UTF-8''R%C3%A4ksm%C3%B6rg%C3%A5s.txt`},
		{`a "b" \c.txt`, `attachment; filename="a \"b\" \\c.txt"; filename*=UTF-8''a%20%22b%22%20%5Cc.txt`},
		{"line\r\nbreak;x=y.txt", `attachment; filename="line__break;x=y.txt"; filename*=UTF-8''line%0D%0Abreak%3Bx%3Dy.txt`},
		{"", `attachment; filename="download"; filename*=UTF-8''download`},
	} {
		got := ContentDisposition(tc.name)
		if got != tc.want {
			t.Errorf("ContentDisposition(%q) = %s, want %s", tc.name, got, tc.want)
		}
		_, params, err := mime.ParseMediaType(got)
		want := tc.name
		if want == "" {
			want = "download"
		}
		if err != nil || params["filename"] != want {
			t.Errorf("ContentDisposition(%q) parses as %q (%v)", tc.name, params["filename"], err)
		}
	}
}
