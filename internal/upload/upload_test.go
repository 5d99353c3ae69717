package upload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/skrip-dev/skrip/internal/errs"
)

// part is one part of a test upload. A file part has a filename parameter unless noName
// is set; any other field is sent without one.
type part struct {
	field    string
	filename string
	isFile   bool
	noName   bool
	body     string
}

func file(name, body string) part {
	return part{field: "files", filename: name, isFile: true, body: body}
}
func field(name, value string) part { return part{field: name, body: value} }

// body encodes parts as a multipart/form-data body, as Go's and curl's clients do.
func body(t testing.TB, parts ...part) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		var pw io.Writer
		var err error
		if p.isFile && !p.noName {
			pw, err = w.CreateFormFile(p.field, p.filename)
		} else {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p.field))
			pw, err = w.CreatePart(h)
		}
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(pw, p.body)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, w.Boundary()
}

// read runs Read over parts into a fresh dir and returns the dir too.
func read(t *testing.T, lim Limits, opts Options, parts ...part) (Form, string, error) {
	t.Helper()
	b, boundary := body(t, parts...)
	dir := t.TempDir()
	form, err := Read(context.Background(), NewReader(b, boundary), dir, lim, opts)
	return form, dir, err
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func files(n int, size int) []part {
	var ps []part
	for i := range n {
		ps = append(ps, file(fmt.Sprintf("f%02d.bin", i), strings.Repeat("x", size)))
	}
	return ps
}

func TestReadAccepts(t *testing.T) {
	small := Limits{MaxFiles: 3, MaxFileBytes: 1000, MaxTotalBytes: 2500}
	tests := []struct {
		name       string
		lim        Limits
		opts       Options
		parts      []part
		wantFiles  []string // names in dir, in upload order
		wantBodies []string
		wantInputs map[string]any
		wantFields map[string]string
	}{
		{
			name: "several files, inputs first, a text field",
			opts: Options{TextFields: []string{"wait"}},
			parts: []part{
				field("inputs", `{"page_size": "a4", "n": 2}`),
				file("a.txt", "hello"),
				file("Räksmörgås.csv", "a,b\n1,2\n"),
				file("empty.bin", ""),
				field("wait", "30s"),
			},
			wantFiles:  []string{"a.txt", "Räksmörgås.csv", "empty.bin"},
			wantBodies: []string{"hello", "a,b\n1,2\n", ""},
			wantInputs: map[string]any{"page_size": "a4", "n": json.Number("2")},
			wantFields: map[string]string{"wait": "30s"},
		},
		{
			name:       "inputs after files, names sanitised",
			parts:      []part{file("../x/report<1>.txt", "r"), file(`C:\Users\me\Ελληνικά.txt`, "g"), field("inputs", " {} ")},
			wantFiles:  []string{"report_1_.txt", "Ελληνικά.txt"},
			wantBodies: []string{"r", "g"},
			wantInputs: map[string]any{},
		},
		{
			name:       "no files, no inputs",
			parts:      []part{field("inputs", "")},
			wantInputs: nil,
		},
		{
			name:       "a browser's empty file input is skipped",
			parts:      []part{file("", ""), field("inputs", `{"a": [1, "x"]}`)},
			wantInputs: map[string]any{"a": []any{json.Number("1"), "x"}},
		},
		{
			name:       "inputs sent as a file, as curl -F inputs=@in.json does",
			parts:      []part{{field: "inputs", filename: "in.json", isFile: true, body: `{"a": true}`}},
			wantInputs: map[string]any{"a": true},
		},
		{
			name:       "files exactly at the caps",
			lim:        small,
			parts:      []part{file("a", strings.Repeat("a", 1000)), file("b", strings.Repeat("b", 1000)), file("c", strings.Repeat("c", 500))},
			wantFiles:  []string{"a", "b", "c"},
			wantBodies: []string{strings.Repeat("a", 1000), strings.Repeat("b", 1000), strings.Repeat("c", 500)},
		},
		{
			name:  "the default caps allow 20 files",
			parts: files(20, 10),
			wantFiles: func() []string {
				var n []string
				for i := range 20 {
					n = append(n, fmt.Sprintf("f%02d.bin", i))
				}
				return n
			}(),
		},
		{
			name:       "another file field",
			opts:       Options{FileField: "file"},
			parts:      []part{{field: "file", body: "z", filename: "z.txt", isFile: true}},
			wantFiles:  []string{"z.txt"},
			wantBodies: []string{"z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form, dir, err := read(t, tt.lim, tt.opts, tt.parts...)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			var names []string
			for i, f := range form.Files {
				names = append(names, f.Name)
				b, err := os.ReadFile(filepath.Join(dir, f.Name))
				if err != nil {
					t.Fatal(err)
				}
				if f.Bytes != int64(len(b)) || f.SHA256 != sum(string(b)) {
					t.Errorf("%s: Form says %d bytes %s, disk has %d bytes %s", f.Name, f.Bytes, f.SHA256, len(b), sum(string(b)))
				}
				if tt.wantBodies != nil && string(b) != tt.wantBodies[i] {
					t.Errorf("%s holds %q, want %q", f.Name, b, tt.wantBodies[i])
				}
				if fi, err := os.Stat(filepath.Join(dir, f.Name)); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("%s: mode %v, %v; want 0644", f.Name, fi.Mode(), err)
				}
			}
			if !slices.Equal(names, tt.wantFiles) {
				t.Errorf("files %q, want %q", names, tt.wantFiles)
			}
			onDisk := dirNames(t, dir)
			slices.Sort(names)
			if !slices.Equal(onDisk, names) {
				t.Errorf("dir holds %q, Form lists %q", onDisk, names)
			}
			if !reflect.DeepEqual(form.Inputs, tt.wantInputs) {
				t.Errorf("inputs %#v, want %#v", form.Inputs, tt.wantInputs)
			}
			if !reflect.DeepEqual(form.Fields, tt.wantFields) {
				t.Errorf("fields %#v, want %#v", form.Fields, tt.wantFields)
			}
		})
	}
}

func TestReadRejects(t *testing.T) {
	small := Limits{MaxFiles: 3, MaxFileBytes: 1000, MaxTotalBytes: 2500}
	tests := []struct {
		name        string
		lim         Limits
		opts        Options
		parts       []part
		want        error
		wantMsg     []string // substrings of the message
		wantDetails map[string]any
	}{
		{
			name:        "collision ignoring case",
			parts:       []part{file("Report.TXT", "1"), file("other.txt", "2"), file("report.txt", "3")},
			want:        ErrInvalid,
			wantMsg:     []string{`"Report.TXT"`, `"report.txt"`, "rename one of them locally"},
			wantDetails: map[string]any{"files": []string{"Report.TXT", "report.txt"}, "names": []string{"Report.TXT", "report.txt"}},
		},
		{
			name:        "collision after sanitising",
			parts:       []part{file("a:b.txt", "1"), file("A?B.txt", "2")},
			want:        ErrInvalid,
			wantMsg:     []string{`"a:b.txt"`, `"A?B.txt"`, `"a_b.txt"`, `"A_B.txt"`, "rename one of them locally"},
			wantDetails: map[string]any{"files": []string{"a:b.txt", "A?B.txt"}, "names": []string{"a_b.txt", "A_B.txt"}},
		},
		{
			name:        "same name twice",
			parts:       []part{file("x/data.csv", "1"), file("y/data.csv", "2")},
			want:        ErrInvalid,
			wantMsg:     []string{`"x/data.csv" and "y/data.csv" would both be stored as "data.csv"`},
			wantDetails: map[string]any{"files": []string{"x/data.csv", "y/data.csv"}, "names": []string{"data.csv", "data.csv"}},
		},
		{
			name:        "reserved name",
			parts:       []part{file("a.txt", "1"), file("ACTION.JSON", "{}")},
			want:        ErrInvalid,
			wantMsg:     []string{`"ACTION.JSON" is a reserved name`, "rename the file"},
			wantDetails: map[string]any{"file": "ACTION.JSON", "reserved": "action.json"},
		},
		{
			name:    "reserved once sanitised",
			parts:   []part{file("../Action.json. ", "{}")},
			want:    ErrInvalid,
			wantMsg: []string{"reserved name"},
		},
		{
			name:        "21 files with the default caps",
			parts:       files(21, 10),
			want:        ErrTooLarge,
			wantMsg:     []string{"at most 20", `"f20.bin" is number 21`},
			wantDetails: map[string]any{"file": "f20.bin", "limit_files": 20},
		},
		{
			name:        "one file over its cap",
			lim:         small,
			parts:       []part{file("ok.txt", "fine"), file("big.bin", strings.Repeat("b", 1001))},
			want:        ErrTooLarge,
			wantMsg:     []string{`"big.bin" is larger than the 1 kB limit for one file`},
			wantDetails: map[string]any{"file": "big.bin", "limit_bytes": int64(1000)},
		},
		{
			name:        "the total over its cap",
			lim:         small,
			parts:       []part{file("a.bin", strings.Repeat("a", 900)), file("b.bin", strings.Repeat("b", 900)), file("c.bin", strings.Repeat("c", 701))},
			want:        ErrTooLarge,
			wantMsg:     []string{`"c.bin" takes the upload over the 2.5 kB limit for all files together`},
			wantDetails: map[string]any{"file": "c.bin", "limit_bytes": int64(2500)},
		},
		{
			name:        "a big file in the default caps",
			parts:       []part{file("huge.iso", strings.Repeat("h", 20_000_001))},
			want:        ErrTooLarge,
			wantMsg:     []string{`"huge.iso" is larger than the 20 MB limit for one file`},
			wantDetails: map[string]any{"file": "huge.iso", "limit_bytes": int64(20_000_000)},
		},
		{
			name:        "inputs not JSON",
			parts:       []part{file("a.txt", "1"), field("inputs", `{"a": `)},
			want:        ErrInvalid,
			wantMsg:     []string{"inputs field is not valid JSON"},
			wantDetails: map[string]any{"field": "inputs"},
		},
		{
			name:    "inputs with a syntax error",
			parts:   []part{field("inputs", `{"a" 1}`)},
			want:    ErrInvalid,
			wantMsg: []string{"inputs field is not valid JSON", "at byte"},
		},
		{
			name:        "inputs with a number no float64 holds",
			parts:       []part{field("inputs", `{"n": [1, 1e400]}`)},
			want:        ErrInvalid,
			wantMsg:     []string{"the inputs field holds 1e400, larger than any number a tool can take"},
			wantDetails: map[string]any{"field": "inputs", "input": "n"},
		},
		{
			name:    "inputs an array",
			parts:   []part{field("inputs", `[1, 2]`), file("a.txt", "1")},
			want:    ErrInvalid,
			wantMsg: []string{"inputs field must be a JSON object, not an array"},
		},
		{
			name:    "inputs null",
			parts:   []part{field("inputs", `null`)},
			want:    ErrInvalid,
			wantMsg: []string{"not null"},
		},
		{
			name:    "inputs with trailing data",
			parts:   []part{field("inputs", `{} {}`)},
			want:    ErrInvalid,
			wantMsg: []string{"one JSON object and nothing after it"},
		},
		{
			name:        "inputs too big",
			parts:       []part{field("inputs", `{"a": "`+strings.Repeat("x", MaxTextBytes)+`"}`)},
			want:        ErrTooLarge,
			wantMsg:     []string{`"inputs" is larger than the 64 KiB limit`},
			wantDetails: map[string]any{"field": "inputs", "limit_bytes": MaxTextBytes},
		},
		{
			name:    "inputs twice",
			parts:   []part{field("inputs", `{}`), file("a.txt", "1"), field("inputs", `{}`)},
			want:    ErrInvalid,
			wantMsg: []string{`"inputs" was sent more than once`},
		},
		{
			name:        "unknown field",
			opts:        Options{TextFields: []string{"wait"}},
			parts:       []part{file("a.txt", "1"), field("state", `{}`)},
			want:        ErrInvalid,
			wantMsg:     []string{`unknown field "state"`, `"files", "inputs", "wait"`},
			wantDetails: map[string]any{"field": "state", "accepted": []string{"files", "inputs", "wait"}},
		},
		{
			name:    "text field not asked for",
			parts:   []part{field("wait", "1s")},
			want:    ErrInvalid,
			wantMsg: []string{`unknown field "wait"`},
		},
		{
			name:    "empty file name with content",
			parts:   []part{file("a.txt", "1"), file("", "data")},
			want:    ErrInvalid,
			wantMsg: []string{"without a file name"},
		},
		{
			name:    "endless empty file parts",
			lim:     small,
			parts:   []part{file("", ""), file("", ""), file("", ""), file("", "")},
			want:    ErrInvalid,
			wantMsg: []string{"more than 3 empty file fields"},
		},
		{
			name:    "file field without a filename parameter",
			parts:   []part{{field: "files", isFile: true, noName: true, body: ""}},
			want:    ErrInvalid,
			wantMsg: []string{"without a file name"},
		},
		{
			name:        "name with nothing left",
			parts:       []part{file(" ... ", "1")},
			want:        ErrInvalid,
			wantMsg:     []string{`" ... " has no letters or digits`, "rename the file"},
			wantDetails: map[string]any{"file": " ... "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form, dir, err := read(t, tt.lim, tt.opts, tt.parts...)
			checkRejected(t, form, dir, err, tt.want)
			for _, s := range tt.wantMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q lacks %q", err, s)
				}
			}
			var e *errs.Error
			errors.As(err, &e)
			for k, v := range tt.wantDetails {
				if !reflect.DeepEqual(e.Details[k], v) {
					t.Errorf("details[%q] = %#v, want %#v", k, e.Details[k], v)
				}
			}
		})
	}
}

// checkRejected fails t unless err is an *errs.Error of kind want and dir is empty.
func checkRejected(t *testing.T, form Form, dir string, err error, want error) {
	t.Helper()
	var e *errs.Error
	if !errors.Is(err, want) || !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want an *errs.Error wrapping %v", err, err, want)
	}
	if form.Files != nil || form.Inputs != nil || form.Fields != nil {
		t.Errorf("a rejected upload returned %+v", form)
	}
	if names := dirNames(t, dir); len(names) > 0 {
		t.Errorf("a rejected upload left %q in the dir", names)
	}
}

func TestReadBrokenBody(t *testing.T) {
	full, boundary := body(t, file("a.txt", strings.Repeat("a", 100_000)), file("b.txt", strings.Repeat("b", 300_000)), field("inputs", "{}"))
	raw := full.Bytes()
	mid := bytes.Index(raw, []byte("bbbb")) + 1000
	disconnect := errors.New("connection reset by peer")
	tests := []struct {
		name     string
		r        io.Reader
		boundary string
	}{
		{"not multipart", strings.NewReader("just some text\r\n"), boundary},
		{"empty body", strings.NewReader(""), boundary},
		{"wrong boundary", bytes.NewReader(raw), "other"},
		{"cut in the middle of a file", bytes.NewReader(raw[:mid]), boundary},
		{"cut before the last boundary", bytes.NewReader(raw[:len(raw)-10]), boundary},
		{"client disconnects mid-file", io.MultiReader(bytes.NewReader(raw[:mid]), iotest.ErrReader(disconnect)), boundary},
		{"client disconnects in short reads", iotest.HalfReader(io.MultiReader(bytes.NewReader(raw[:mid]), iotest.ErrReader(disconnect))), boundary},
		{"malformed part header", strings.NewReader("--" + boundary + "\r\nno colon here\r\n\r\nx\r\n--" + boundary + "--\r\n"), boundary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			form, err := Read(context.Background(), NewReader(tt.r, tt.boundary), dir, Limits{}, Options{})
			checkRejected(t, form, dir, err, ErrInvalid)
		})
	}
}

// cancelAfter cancels a context once n bytes have been read through it.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= n; c.n <= 0 {
		c.cancel()
	}
	return n, err
}

func TestReadCancelled(t *testing.T) {
	b, boundary := body(t, file("a.txt", strings.Repeat("a", 100_000)), file("b.txt", strings.Repeat("b", 300_000)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	r := &cancelAfter{r: b, n: 150_000, cancel: cancel}
	form, err := Read(ctx, NewReader(r, boundary), dir, Limits{}, Options{})
	if !errors.Is(err, context.Canceled) || form.Files != nil {
		t.Fatalf("Read = %+v, %v; want context.Canceled", form, err)
	}
	if names := dirNames(t, dir); len(names) > 0 {
		t.Errorf("a cancelled upload left %q", names)
	}
}

func TestReadNeedsEmptyDir(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(keep, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, boundary := body(t, file("a.txt", "new"))
	if _, err := Read(context.Background(), NewReader(b, boundary), dir, Limits{}, Options{}); err == nil || errors.Is(err, ErrInvalid) {
		t.Fatalf("Read into a non-empty dir: %v", err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "keep" {
		t.Fatalf("the existing file was touched: %q, %v", b, err)
	}
	b, boundary = body(t, file("a.txt", "new"))
	if _, err := Read(context.Background(), NewReader(b, boundary), filepath.Join(dir, "missing"), Limits{}, Options{}); err == nil {
		t.Fatal("Read into a missing dir succeeded")
	}
}

func TestReadUTF8FileNames(t *testing.T) {
	// Browsers send the name as raw UTF-8 in the quoted string; other clients use RFC 2231.
	for _, disp := range []string{
		`form-data; name="files"; filename="Ra` + "\u0308" + `ksmo` + "\u0308" + `rga` + "\u030a" + `s.txt"`,
		`form-data; name="files"; filename*=UTF-8''Ra%CC%88ksmo%CC%88rga%CC%8As.txt`,
	} {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		pw, _ := w.CreatePart(textproto.MIMEHeader{"Content-Disposition": {disp}})
		io.WriteString(pw, "smörgås")
		w.Close()
		dir := t.TempDir()
		form, err := Read(context.Background(), NewReader(&buf, w.Boundary()), dir, Limits{}, Options{})
		if err != nil || len(form.Files) != 1 || form.Files[0].Name != "Räksmörgås.txt" {
			t.Fatalf("%s: %+v, %v", disp, form, err)
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{"Räksmörgås.txt"}) {
			t.Fatalf("dir holds %q", names)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{999, "999 B"},
		{1000, "1 kB"},
		{1500, "1.5 kB"},
		{2500, "2.5 kB"},
		{65536, "65.53 kB"},
		{20_000_000, "20 MB"},
		{50_000_000, "50 MB"},
		{20_000_001, "20 MB"},
		{1_250_000_000, "1.25 GB"},
		{1 << 62, "4.61 EB"},
	}
	for _, tt := range tests {
		if got := formatSize(tt.n); got != tt.want {
			t.Errorf("formatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// FuzzRead feeds arbitrary bodies (boundary "B") to Read with small caps. Either the
// upload is accepted and the dir holds exactly the listed files, each within the rules,
// or it is rejected with ErrInvalid or ErrTooLarge and the dir is empty.
func FuzzRead(f *testing.F) {
	lim := Limits{MaxFiles: 3, MaxFileBytes: 64, MaxTotalBytes: 100}
	f.Fuzz(func(t *testing.T, raw []byte) {
		dir := t.TempDir()
		form, err := Read(context.Background(), NewReader(bytes.NewReader(raw), "B"), dir, lim, Options{TextFields: []string{"wait"}})
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || !(errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooLarge)) {
				t.Fatalf("err = %v (%T), want an *errs.Error wrapping ErrInvalid or ErrTooLarge", err, err)
			}
			checkRejected(t, form, dir, err, e.Kind)
			return
		}
		if len(form.Files) > lim.MaxFiles {
			t.Fatalf("%d files accepted", len(form.Files))
		}
		var total int64
		folded := map[string]bool{}
		var names []string
		for _, fl := range form.Files {
			checkName(t, fl.Name, fl.Name)
			if strings.EqualFold(fl.Name, ReservedName) || folded[foldKey(fl.Name)] {
				t.Fatalf("%q accepted", fl.Name)
			}
			folded[foldKey(fl.Name)] = true
			b, err := os.ReadFile(filepath.Join(dir, fl.Name))
			if err != nil || int64(len(b)) != fl.Bytes || sum(string(b)) != fl.SHA256 || fl.Bytes > lim.MaxFileBytes {
				t.Fatalf("%+v: disk has %d bytes, %v", fl, len(b), err)
			}
			total += fl.Bytes
			names = append(names, fl.Name)
		}
		if total > lim.MaxTotalBytes {
			t.Fatalf("%d bytes accepted in all", total)
		}
		slices.Sort(names)
		if onDisk := dirNames(t, dir); !slices.Equal(onDisk, names) {
			t.Fatalf("dir holds %q, Form lists %q", onDisk, names)
		}
	})
}
