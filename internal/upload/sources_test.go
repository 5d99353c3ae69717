package upload

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

func source(name, body string) Source {
	return Source{Name: name, Size: int64(len(body)), Key: "files/" + name,
		Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }}
}

// TestCopyFiles copies files already on the server in as an upload's, by the upload's
// rules: a refusal, or a source that fails, leaves the dir empty; a source's failure is
// the server's (passed on as it is), never taken for a malformed upload.
func TestCopyFiles(t *testing.T) {
	lim := Limits{MaxFiles: 2, MaxFileBytes: 10, MaxTotalBytes: 15}
	broken := errors.New("the blob store went away")
	for _, tc := range []struct {
		name  string
		srcs  []Source
		want  []string // names copied, when accepted
		isErr error
		has   string
	}{
		{"two files", []Source{source("a.csv", "1"), source("Ö b.txt", "22")}, []string{"a.csv", "Ö b.txt"}, nil, ""},
		{"a name sanitised", []Source{source("a:b.csv", "1")}, []string{"a_b.csv"}, nil, ""},
		{"too many", []Source{source("a", "1"), source("b", "1"), source("c", "1")}, nil, ErrTooLarge, "files/c"},
		{"a declared size over the cap", []Source{source("a", strings.Repeat("x", 11))}, nil, ErrTooLarge, "files/a"},
		{"declared sizes over the total", []Source{source("a", "123456789"), source("b", "1234567")}, nil, ErrTooLarge, "files/b"},
		{"a size that lied", []Source{{Name: "a", Size: 1, Open: source("a", strings.Repeat("x", 11)).Open}}, nil, ErrTooLarge, "a"},
		{"case collision", []Source{source("a.csv", "1"), source("A.CSV", "2")}, nil, ErrInvalid, "rename"},
		{"action.json", []Source{source("Action.json", "{}")}, nil, ErrInvalid, "reserved"},
		{"a source that fails to open", []Source{source("a", "1"), {Name: "b", Size: 1,
			Open: func(context.Context) (io.ReadCloser, error) { return nil, broken }}}, nil, broken, ""},
		{"a source that fails midway", []Source{source("a", "1"), {Name: "b", Size: 5,
			Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(io.MultiReader(strings.NewReader("12"), iotest.ErrReader(broken))), nil
			}}}, nil, broken, ""},
	} {
		dir := t.TempDir()
		got, err := CopyFiles(context.Background(), dir, lim, tc.srcs)
		entries, _ := os.ReadDir(dir)
		if tc.isErr != nil {
			if !errors.Is(err, tc.isErr) || !strings.Contains(err.Error(), tc.has) || errors.Is(err, ErrInvalid) && tc.isErr == broken {
				t.Errorf("%s: %v, want %v naming %q", tc.name, err, tc.isErr, tc.has)
			}
			if len(entries) != 0 {
				t.Errorf("%s: refused, but left %d files", tc.name, len(entries))
			}
			continue
		}
		var names []string
		for _, f := range got {
			names = append(names, f.Name)
		}
		if err != nil || strings.Join(names, "|") != strings.Join(tc.want, "|") || len(entries) != len(tc.want) {
			t.Errorf("%s: %v %v (%d in the dir), want %v", tc.name, names, err, len(entries), tc.want)
		}
	}
}

// TestParseInputs reads a JSON run's inputs as the multipart field's.
func TestParseInputs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		size int
	}{{"", true, 0}, {"null", true, 0}, {`{"n": 2}`, true, 1}, {`[1]`, false, 0}, {`{"n": 1e400}`, false, 0}} {
		got, err := ParseInputs([]byte(tc.in))
		if (err == nil) != tc.ok || len(got) != tc.size || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("ParseInputs(%q) = %v, %v", tc.in, got, err)
		}
	}
	if _, err := ParseInputs([]byte(`{"a": "` + strings.Repeat("x", MaxTextBytes) + `"}`)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("inputs over the cap: %v", err)
	}
}
