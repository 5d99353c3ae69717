package upload

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/errs"
)

// streamed is what one StreamFile call handed to its fn and what the body read gave.
type streamed struct {
	called  bool
	stream  Stream
	data    []byte
	readErr error // the error that ended the body's read: io.EOF when it ended cleanly
}

// streamRaw runs StreamFile over raw (boundary "B") with an fn that reads the whole body
// as a store would, keeping what it read only when the read ended cleanly.
func streamRaw(raw string) (streamed, error) {
	var got streamed
	err := StreamFile(context.Background(), NewReader(strings.NewReader(raw), "B"),
		StreamOptions{FileField: "file", TextFields: []string{"key", "ttl"}}, func(s Stream) error {
			got.called, got.stream = true, s
			var buf bytes.Buffer
			_, err := io.Copy(&buf, io.LimitReader(s.Body, 1<<20))
			if err != nil {
				got.readErr = err
				return err
			}
			got.readErr = io.EOF
			got.data = buf.Bytes()
			return nil
		})
	return got, err
}

const head = "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n"

func TestStreamFile(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		kind error  // nil: accepted
		msg  string // part of the error message
	}{
		{"whole", "--B\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nfiles/k\r\n" + head + "hello!\r\n--B--\r\n", nil, ""},
		{"no closing boundary", head + "hello!\r\n--B", ErrInvalid, "closing multipart boundary"},
		{"cut after the part", head + "hello!\r\n", ErrInvalid, "closing multipart boundary"},
		{"cut in the part", head + "hello!", ErrInvalid, "closing multipart boundary"},
		{"NUL in the file name", "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\x00b.txt\"\r\n\r\nx\r\n--B--\r\n", ErrInvalid, "multipart/form-data"},
		{"LF in the file name", "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\nb.txt\"\r\n\r\nx\r\n--B--\r\n", ErrInvalid, "multipart/form-data"},
		{"field after the file", head + "x\r\n--B\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--B--\r\n", ErrInvalid, `"key" comes after the file`},
		{"two files", head + "x\r\n" + head + "y\r\n--B--\r\n", ErrInvalid, "one file per request"},
		{"unknown field", "--B\r\nContent-Disposition: form-data; name=\"colour\"\r\n\r\nred\r\n" + head + "x\r\n--B--\r\n", ErrInvalid, `unknown field "colour"`},
		{"repeated field", "--B\r\nContent-Disposition: form-data; name=\"ttl\"\r\n\r\n1h\r\n--B\r\nContent-Disposition: form-data; name=\"ttl\"\r\n\r\n2h\r\n" + head + "x\r\n--B--\r\n", ErrInvalid, "more than once"},
		{"no file", "--B\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--B--\r\n", ErrInvalid, `no field named "file"`},
		{"field too long", "--B\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n" + strings.Repeat("k", MaxTextBytes+1) + "\r\n" + head + "x\r\n--B--\r\n", ErrTooLarge, `"key" is larger`},
		{"no field name", "--B\r\nContent-Type: text/plain\r\n\r\nx\r\n--B--\r\n", ErrInvalid, "no form-data field name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := streamRaw(tt.raw)
			if tt.kind == nil {
				if err != nil || string(got.data) != "hello!" || got.stream.Fields["key"] != "files/k" || got.stream.FileName != "a.txt" {
					t.Fatalf("got %+v, %v", got, err)
				}
				return
			}
			var e *errs.Error
			if !errors.As(err, &e) || !errors.Is(err, tt.kind) || !strings.Contains(e.Error(), tt.msg) {
				t.Fatalf("err = %v; want %v with %q", err, tt.kind, tt.msg)
			}
			if got.called && got.readErr == io.EOF {
				t.Fatalf("the body read ended cleanly (%q) for a rejected upload: a store would keep it", got.data)
			}
		})
	}
}

// FuzzStreamFile feeds arbitrary bodies (boundary "B") to StreamFile. Either the upload is
// accepted, with the body read ending cleanly on exactly the bytes of a file part that a
// plain multipart.Reader finds last before the closing boundary, or it is rejected with
// ErrInvalid or ErrTooLarge and the body read (if any) failed, so a store kept nothing.
func FuzzStreamFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := streamRaw(string(raw))
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || !(errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooLarge)) {
				t.Fatalf("err = %v (%T), want an *errs.Error wrapping ErrInvalid or ErrTooLarge", err, err)
			}
			if got.called && got.readErr == io.EOF {
				t.Fatalf("rejected (%v) after the body read ended cleanly: a store would keep %q", err, got.data)
			}
			return
		}
		if !got.called || got.readErr != io.EOF {
			t.Fatalf("accepted without a clean read: %+v", got)
		}
		for k, v := range got.stream.Fields {
			if (k != "key" && k != "ttl") || len(v) > MaxTextBytes {
				t.Fatalf("field %q = %d bytes accepted", k, len(v))
			}
		}
		// The reference: the last part is the file, and the body closes right after it.
		mr := multipart.NewReader(bytes.NewReader(raw), "B")
		var last []byte
		var lastName string
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("accepted a body multipart.Reader fails on: %v", err)
			}
			lastName = p.FormName()
			if last, err = io.ReadAll(p); err != nil {
				t.Fatalf("accepted a body whose part fails: %v", err)
			}
		}
		if lastName != "file" || !bytes.Equal(last, got.data) {
			t.Fatalf("streamed %q; the last part is %q = %q", got.data, lastName, last)
		}
	})
}
