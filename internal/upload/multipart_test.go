package upload

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

// TestMultipartReaderRefuses: MultipartReader refuses what http.Request.MultipartReader
// refuses, with the same errors.
func TestMultipartReaderRefuses(t *testing.T) {
	for _, ct := range []string{"", "text/plain", "multipart/form-data", "multipart/form-data; boundary", "form-data; boundary=B"} {
		req := httptest.NewRequest("POST", "/", strings.NewReader("--B--\r\n"))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		_, got := MultipartReader(req)
		_, want := req.Clone(context.Background()).MultipartReader()
		if got == nil || want == nil || got.Error() != want.Error() {
			t.Errorf("Content-Type %q: %v; http.Request gives %v", ct, got, want)
		}
	}
}

// TestMultipartReaderTakes: MultipartReader takes the content types
// http.Request.MultipartReader takes.
func TestMultipartReaderTakes(t *testing.T) {
	for _, ct := range []string{"multipart/form-data; boundary=B", "multipart/mixed; boundary=B", `Multipart/Form-Data; boundary="B"; charset=utf-8`} {
		req := httptest.NewRequest("POST", "/", strings.NewReader("--B--\r\n"))
		req.Header.Set("Content-Type", ct)
		mr, err := MultipartReader(req)
		if err != nil {
			t.Fatalf("Content-Type %q: %v", ct, err)
		}
		if _, err := nextPart(context.Background(), mr); err != io.EOF {
			t.Fatalf("Content-Type %q: NextPart = %v, want io.EOF", ct, err)
		}
	}
}

// TestMultipartReaderLargeFile streams files whose closing boundary lands at each byte
// around the edge of the read buffer, read a few bytes at a time, and gets every byte.
func TestMultipartReaderLargeFile(t *testing.T) {
	head := "--B\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nfiles/k\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\r\n"
	for _, size := range []int{bodyBufBytes - len(head) - 12, bodyBufBytes - len(head) - 3, bodyBufBytes - len(head), bodyBufBytes + 1, 3*bodyBufBytes + 5} {
		data := bytes.Repeat([]byte("-B\r\n--"), size/6+1)[:size] // near-boundaries everywhere
		body := head + string(data) + "\r\n--B--\r\n"
		req := httptest.NewRequest("POST", "/", iotest.HalfReader(strings.NewReader(body)))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
		mr, err := MultipartReader(req)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		err = StreamFile(context.Background(), mr, StreamOptions{TextFields: []string{"key"}}, func(s Stream) error {
			var rerr error
			got, rerr = io.ReadAll(s.Body)
			return rerr
		})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: read %d bytes, %v", size, len(got), err)
		}
	}
}

// TestMultipartReaderCut: a body cut short in the file is refused as before, with the
// request's own error when it has one (a body over http.MaxBytesReader's limit).
func TestMultipartReaderCut(t *testing.T) {
	head := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\r\n"
	body := head + strings.Repeat("x", 2*bodyBufBytes)
	for _, limit := range []int64{-1, bodyBufBytes + 10} {
		req := httptest.NewRequest("POST", "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
		if limit > 0 {
			req.Body = http.MaxBytesReader(httptest.NewRecorder(), req.Body, limit)
		}
		mr, err := MultipartReader(req)
		if err != nil {
			t.Fatal(err)
		}
		err = StreamFile(context.Background(), mr, StreamOptions{}, func(s Stream) error {
			_, err := io.Copy(io.Discard, s.Body)
			return err
		})
		want := ErrInvalid
		if limit > 0 {
			want = ErrTooLarge
		}
		if !errors.Is(err, want) {
			t.Fatalf("limit %d: %v; want %v", limit, err, want)
		}
	}
}

// TestMultipartReaderEnd: what follows the closing boundary decides whether the body is
// whole. A line break is taken; bytes after it, or a body whose transport ends short of
// its framing, fail both Read and StreamFile, so nothing is kept.
func TestMultipartReaderEnd(t *testing.T) {
	const file = "--B\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.txt\"\r\n\r\nhello\r\n--B--"
	cut := func(s string) func() io.Reader {
		return func() io.Reader { return io.MultiReader(strings.NewReader(s), iotest.ErrReader(io.ErrUnexpectedEOF)) }
	}
	text := func(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }
	tests := []struct {
		name string
		rest func() io.Reader
		ok   bool
	}{
		{"nothing", text(""), true},
		{"crlf", text("\r\n"), true},
		{"crlf crlf", text("\r\n\r\n"), true}, // the first line break ends the boundary line
		{"blanks", text("  \t\r\n"), true},
		{"crlf crlf crlf", text("\r\n\r\n\r\n"), false},
		{"no line break, bytes", text("x"), false},
		{"far after", text("\r\n" + strings.Repeat(" ", 100) + "x"), false},
		{"boundary again", text("\r\n--B--\r\n"), false},
		{"bytes after", text("\r\nmore bytes"), false},
		{"a second body", text("\r\n" + file + "\r\n"), false},
		{"cut short", cut("\r\n"), false},
		{"cut short at once", cut(""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A byte at a time, the boundary is found across reads too.
			body := func() *Reader {
				return NewReader(iotest.OneByteReader(io.MultiReader(strings.NewReader(file), tt.rest())), "B")
			}
			err := StreamFile(context.Background(), body(), StreamOptions{FileField: "files"}, func(s Stream) error {
				_, err := io.Copy(io.Discard, s.Body)
				return err
			})
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Errorf("StreamFile: %v, want ok=%v or ErrInvalid", err, tt.ok)
			}
			dir := t.TempDir()
			_, err = Read(context.Background(), body(), dir, Limits{}, Options{})
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Errorf("Read: %v, want ok=%v or ErrInvalid", err, tt.ok)
			}
			if left, _ := os.ReadDir(dir); !tt.ok && len(left) > 0 {
				t.Errorf("Read kept %d files of a refused body", len(left))
			}
		})
	}
}
