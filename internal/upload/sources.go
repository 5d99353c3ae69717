package upload

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/skrip-dev/skrip/internal/errs"
)

// Runs whose files are already on the server (docs/api.md "Runs"): a JSON run names staged
// files by key, and they are copied into the run's input directory by the rules a
// multipart upload's files follow (names, collisions, action.json, the caps), so that a
// tool cannot tell one way from the other.

// Source is one file to copy in as an uploaded file: its name (sanitised as an upload's
// is), its length when known before its bytes (-1 when not), and how to open its bytes.
type Source struct {
	Name string
	Size int64
	// Key is what the caller named the file by (a staged file's key), for messages;
	// "" names it by Name.
	Key  string
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// sourceError is a Source whose bytes could not be opened or read: the server's fault,
// passed on as it is rather than taken for a malformed upload.
type sourceError struct{ err error }

func (e sourceError) Error() string { return e.err.Error() }
func (e sourceError) Unwrap() error { return e.err }

type sourceReader struct{ r io.Reader }

func (s sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = sourceError{err}
	}
	return n, err
}

// ParseInputs reads a run's inputs sent as JSON (the inputs of a JSON run) by the rules of
// the multipart inputs field: one JSON object, numbers kept as written (json.Number),
// none too large for a tool; an empty value or null is no inputs.
func ParseInputs(b []byte) (map[string]any, error) {
	if string(b) == "null" {
		return nil, nil
	}
	if len(b) > MaxTextBytes {
		return nil, errs.New(ErrTooLarge, map[string]any{"field": InputsField, "limit_bytes": MaxTextBytes},
			"the field %q is larger than the %d KiB limit; send a smaller value", InputsField, MaxTextBytes>>10)
	}
	return parseInputs(b)
}

// CopyFiles copies srcs into dir (which must exist and be empty) as Read stores an
// upload's files, one at a time and in order, and returns them. The caps are checked
// against the lengths known before a byte moves, and again while the bytes stream. Any
// refusal or failure leaves dir empty.
func CopyFiles(ctx context.Context, dir string, lim Limits, srcs []Source) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("upload dir: %w", err)
	}
	if len(entries) > 0 {
		return nil, fmt.Errorf("upload dir %s is not empty", dir)
	}
	lim = lim.WithDefaults()
	if len(srcs) > lim.MaxFiles {
		s := srcs[lim.MaxFiles]
		return nil, errs.New(ErrTooLarge, map[string]any{"file": s.label(), "limit_files": lim.MaxFiles},
			"too many files: at most %d can be used at once and %q is number %d; name fewer files", lim.MaxFiles, s.label(), len(srcs))
	}
	var total int64
	for _, s := range srcs {
		if s.Size > lim.MaxFileBytes {
			return nil, errs.New(ErrTooLarge, map[string]any{"file": s.label(), "limit_bytes": lim.MaxFileBytes},
				"%q is larger than the %s limit for one file of a run; use a smaller file", s.label(), formatSize(lim.MaxFileBytes))
		}
		if total += max(s.Size, 0); total > lim.MaxTotalBytes {
			return nil, errs.New(ErrTooLarge, map[string]any{"file": s.label(), "limit_bytes": lim.MaxTotalBytes},
				"%q takes the run over the %s limit for all files together; use fewer or smaller files", s.label(), formatSize(lim.MaxTotalBytes))
		}
	}
	r := &reader{dir: dir, lim: lim, opts: Options{FileField: "files"}, buf: make([]byte, copyBufBytes), folded: map[string]int{}, seen: map[string]bool{}}
	for _, s := range srcs {
		if err := r.copySource(ctx, s); err != nil {
			if rerr := r.removeCreated(); rerr != nil {
				return nil, fmt.Errorf("files refused (%v) and those copied could not be removed: %w", err, rerr)
			}
			return nil, err
		}
	}
	return r.form.Files, nil
}

func (r *reader) copySource(ctx context.Context, s Source) error {
	rc, err := s.Open(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	return r.readFile(ctx, sourceReader{rc}, s.Name, true)
}

func (s Source) label() string {
	if s.Key != "" {
		return s.Key
	}
	return s.Name
}
