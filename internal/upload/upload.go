// Package upload reads the multipart body of a tool run. It streams the files into a
// scratch dir under sanitised names and checks names, collisions, reserved names and the
// size caps while reading, so a rejected upload leaves nothing behind and nothing runs.
package upload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skrip-dev/skrip/internal/errs"
)

// Sentinels for a rejected upload; the api package maps them to HTTP answers.
var (
	// ErrInvalid is an upload that breaks a rule (a bad name, bad inputs, an unknown field).
	ErrInvalid = errors.New("invalid upload")
	// ErrTooLarge is an upload over one of the caps in Limits.
	ErrTooLarge = errors.New("upload too large")
)

const (
	// MaxTextBytes is the largest value accepted for the inputs field and each text field.
	MaxTextBytes = 64 << 10
	// ReservedName is the name of the file skrip itself puts in the input dir of action runs.
	ReservedName = "action.json"
	// InputsField is the multipart field holding the run's inputs as a JSON object.
	InputsField = "inputs"

	copyBufBytes = 64 << 10
)

// Limits are the caps on one upload (docs/spec.md §5). A field of zero or less takes its default.
type Limits struct {
	MaxFiles      int   // SKRIP_UPLOAD_MAX_FILES, default 20
	MaxFileBytes  int64 // SKRIP_UPLOAD_MAX_FILE_BYTES, default 20000000
	MaxTotalBytes int64 // SKRIP_UPLOAD_MAX_TOTAL_BYTES, default 50000000
}

// DefaultLimits returns the caps docs/spec.md §5 gives when nothing is set.
func DefaultLimits() Limits {
	return Limits{MaxFiles: 20, MaxFileBytes: 20_000_000, MaxTotalBytes: 50_000_000}
}

// WithDefaults returns l with each unset cap at its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxFiles <= 0 {
		l.MaxFiles = d.MaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	return l
}

// File is one uploaded file as stored in the dir given to Read.
type File struct {
	Name   string // sanitised name, as stored in dir
	Bytes  int64
	SHA256 string // lowercase hex
}

// Form is what Read found in an accepted upload.
type Form struct {
	Files  []File            // in upload order
	Inputs map[string]any    // the "inputs" field parsed as a JSON object (numbers as json.Number); nil when absent or empty
	Fields map[string]string // other accepted small text fields named in Options.TextFields; nil when none came
}

// Options name the fields Read accepts besides inputs.
type Options struct {
	FileField  string   // the multipart field holding files; default "files"
	TextFields []string // extra small text fields to accept (each ≤ 64 KiB), e.g. "wait"
}

// Read consumes the whole multipart body. Files stream into dir (which must exist and be
// empty) under their sanitised names, written with O_EXCL and mode 0644, and hashed while
// they are written. Limits are enforced while reading, never after buffering a whole file.
// Any problem (a bad or colliding name, a reserved name, too many files, a file or the
// total over its cap, malformed inputs JSON, an unknown field, a malformed body, ctx
// cancelled, the client disconnecting) returns an error and leaves dir empty, with no
// partial file. Problems with the upload are *errs.Error wrapping ErrInvalid or
// ErrTooLarge; a cancelled ctx gives ctx's error; anything else is the server's fault.
//
// A file part with an empty file name and an empty body is skipped: it is what a browser
// sends for a file input where no file was chosen.
func Read(ctx context.Context, mr *Reader, dir string, lim Limits, opts Options) (Form, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Form{}, fmt.Errorf("upload dir: %w", err)
	}
	if len(entries) > 0 {
		return Form{}, fmt.Errorf("upload dir %s is not empty", dir)
	}
	if opts.FileField == "" {
		opts.FileField = "files"
	}
	r := &reader{
		dir:    dir,
		lim:    lim.WithDefaults(),
		opts:   opts,
		buf:    make([]byte, copyBufBytes),
		folded: map[string]int{},
		seen:   map[string]bool{},
	}
	if err := r.readAll(ctx, mr); err != nil {
		if rerr := r.removeCreated(); rerr != nil {
			return Form{}, fmt.Errorf("upload rejected (%v) and its files could not be removed: %w", err, rerr)
		}
		return Form{}, err
	}
	return r.form, nil
}

// reader holds the state of one Read.
type reader struct {
	dir     string
	lim     Limits
	opts    Options
	buf     []byte
	form    Form
	created []string        // paths of files created so far, the last one maybe partial
	raw     []string        // the name each file in form.Files was sent with
	folded  map[string]int  // foldKey of a stored name -> its index in form.Files
	seen    map[string]bool // text fields read so far
	total   int64           // bytes in all files so far
	skipped int             // empty file parts skipped so far
}

func (r *reader) readAll(ctx context.Context, mr *Reader) error {
	for {
		part, err := nextPart(ctx, mr)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := r.readPart(ctx, part); err != nil {
			return err
		}
	}
}

func (r *reader) readPart(ctx context.Context, part *multipart.Part) error {
	field, filename, hasName, err := formField(part, r.opts.FileField)
	if err != nil {
		return err
	}
	switch {
	case field == r.opts.FileField:
		return r.readFile(ctx, part, filename, hasName)
	case field == InputsField || slices.Contains(r.opts.TextFields, field):
		return r.readText(ctx, part, field)
	}
	return unknownField(field, append([]string{r.opts.FileField, InputsField}, r.opts.TextFields...))
}

// formField reads a part's Content-Disposition: its form-data field name, and its file
// name when it has one. fileField names the file field in the error for a part without
// a field name.
func formField(part *multipart.Part, fileField string) (field, filename string, hasName bool, err error) {
	disp, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil && part.Header.Get("Content-Disposition") != "" {
		return "", "", false, errs.New(ErrInvalid, nil,
			"a part of the upload has a malformed Content-Disposition header; send multipart/form-data")
	}
	if disp != "form-data" || params["name"] == "" {
		return "", "", false, errs.New(ErrInvalid, nil,
			"a part of the upload has no form-data field name; send the files as multipart/form-data fields named %q", fileField)
	}
	filename, hasName = params["filename"]
	return params["name"], filename, hasName, nil
}

// unknownField refuses a field that is none of accepted.
func unknownField(field string, accepted []string) error {
	quoted := make([]string, len(accepted))
	for i, a := range accepted {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return errs.New(ErrInvalid, map[string]any{"field": field, "accepted": accepted},
		"the upload has an unknown field %q; the accepted fields are %s", field, strings.Join(quoted, ", "))
}

// nextPart returns the next part of mr, or a bare io.EOF at the closing boundary. Only a
// bare io.EOF is the closing boundary: a body that ends early gives an error that wraps
// io.EOF, which is ErrInvalid like any other malformed body. At the closing boundary the
// rest of the body is read too, and a body with bytes after the boundary, or one that
// ends short of its Content-Length, is ErrInvalid or the transport's read error instead
// of io.EOF: so nothing is kept from a body that is not whole.
func nextPart(ctx context.Context, mr *Reader) (*multipart.Part, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	part, err := mr.mr.NextPart()
	if err == io.EOF {
		if err := mr.end(ctx); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	if err != nil {
		return nil, readError(ctx, err)
	}
	return part, nil
}

// readText reads the inputs field or one of Options.TextFields.
func (r *reader) readText(ctx context.Context, part *multipart.Part, field string) error {
	if r.seen[field] {
		return errs.New(ErrInvalid, map[string]any{"field": field},
			"the field %q was sent more than once; send it once", field)
	}
	r.seen[field] = true
	b, err := textValue(ctx, part, field)
	if err != nil {
		return err
	}
	if field != InputsField {
		if r.form.Fields == nil {
			r.form.Fields = map[string]string{}
		}
		r.form.Fields[field] = string(b)
		return nil
	}
	inputs, err := parseInputs(b)
	if err != nil {
		return err
	}
	r.form.Inputs = inputs
	return nil
}

// textValue reads a text field of at most MaxTextBytes.
func textValue(ctx context.Context, part io.Reader, field string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(part, MaxTextBytes+1))
	if err != nil {
		return nil, readError(ctx, err)
	}
	if len(b) > MaxTextBytes {
		return nil, errs.New(ErrTooLarge, map[string]any{"field": field, "limit_bytes": MaxTextBytes},
			"the field %q is larger than the %d KiB limit; send a smaller value", field, MaxTextBytes>>10)
	}
	return b, nil
}

// readFile checks one file part's name against the rules and the caps, then streams it
// into the dir.
func (r *reader) readFile(ctx context.Context, part io.Reader, raw string, hasName bool) error {
	if raw == "" {
		// A browser sends filename="" and no bytes for a file input left empty.
		n, err := io.ReadFull(part, r.buf[:1])
		if hasName && n == 0 && errors.Is(err, io.EOF) {
			// Bound them like files, so a body of endless empty parts is not read forever.
			if r.skipped++; r.skipped > r.lim.MaxFiles {
				return errs.New(ErrInvalid, map[string]any{"field": r.opts.FileField, "limit_files": r.lim.MaxFiles},
					"the upload has more than %d empty file fields; send at most %d", r.lim.MaxFiles, r.lim.MaxFiles)
			}
			return nil
		}
		if n == 0 && err != nil && !errors.Is(err, io.EOF) {
			return readError(ctx, err)
		}
		return errs.New(ErrInvalid, map[string]any{"field": r.opts.FileField},
			"a file was sent without a file name in the field %q; send each file with its name", r.opts.FileField)
	}
	if len(r.form.Files) >= r.lim.MaxFiles {
		return errs.New(ErrTooLarge, map[string]any{"file": raw, "limit_files": r.lim.MaxFiles},
			"too many files: at most %d can be uploaded at once and %q is number %d; upload fewer files",
			r.lim.MaxFiles, raw, len(r.form.Files)+1)
	}
	name, err := SanitizeName(raw)
	if err != nil {
		return err
	}
	if strings.EqualFold(name, ReservedName) {
		return errs.New(ErrInvalid, map[string]any{"file": raw, "reserved": ReservedName},
			"%q is a reserved name (skrip uses %s for actions); rename the file", raw, ReservedName)
	}
	key := foldKey(name)
	if i, dup := r.folded[key]; dup {
		return collision(r.raw[i], r.form.Files[i].Name, raw, name)
	}
	path := filepath.Join(r.dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("upload: create %s: %w", name, err)
	}
	r.created = append(r.created, path)
	file, err := r.copyFile(ctx, f, part, raw)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("upload: write %s: %w", name, cerr)
	}
	if err != nil {
		return err
	}
	// O_CREATE's mode is cut by the umask; the sandbox user must be able to read the file.
	if err := os.Chmod(path, 0o644); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	file.Name = name
	r.folded[key] = len(r.form.Files)
	r.form.Files = append(r.form.Files, file)
	r.raw = append(r.raw, raw)
	return nil
}

// copyFile streams part into f, hashing as it goes, and stops with ErrTooLarge as soon as
// the file or the upload's total passes its cap; nothing past the cap is written.
func (r *reader) copyFile(ctx context.Context, f *os.File, part io.Reader, raw string) (File, error) {
	h := sha256.New()
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return File{}, fmt.Errorf("upload: %w", err)
		}
		m, rerr := part.Read(r.buf)
		if m > 0 {
			n += int64(m)
			if n > r.lim.MaxFileBytes {
				return File{}, errs.New(ErrTooLarge, map[string]any{"file": raw, "limit_bytes": r.lim.MaxFileBytes},
					"%q is larger than the %s limit for one file; upload a smaller file", raw, formatSize(r.lim.MaxFileBytes))
			}
			if r.total+n > r.lim.MaxTotalBytes {
				return File{}, errs.New(ErrTooLarge, map[string]any{"file": raw, "limit_bytes": r.lim.MaxTotalBytes},
					"%q takes the upload over the %s limit for all files together; upload fewer or smaller files",
					raw, formatSize(r.lim.MaxTotalBytes))
			}
			h.Write(r.buf[:m])
			if _, err := f.Write(r.buf[:m]); err != nil {
				return File{}, fmt.Errorf("upload: write: %w", err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return File{}, readError(ctx, rerr)
		}
	}
	r.total += n
	return File{Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// removeCreated removes every file this Read created, so a rejected upload leaves the dir
// as it found it: empty.
func (r *reader) removeCreated() error {
	var errList []error
	for _, p := range r.created {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errList = append(errList, err)
		}
	}
	return errors.Join(errList...)
}

// collision explains that two uploaded names are the same once sanitised, ignoring case.
func collision(raw1, name1, raw2, name2 string) error {
	details := map[string]any{"files": []string{raw1, raw2}, "names": []string{name1, name2}}
	const fix = "rename one of them locally and upload again"
	switch {
	case raw1 == name1 && raw2 == name2:
		return errs.New(ErrInvalid, details, "%q and %q have the same name when case is ignored; %s", raw1, raw2, fix)
	case name1 == name2:
		return errs.New(ErrInvalid, details, "%q and %q would both be stored as %q; %s", raw1, raw2, name1, fix)
	}
	return errs.New(ErrInvalid, details, "%q and %q would be stored as %q and %q, the same name when case is ignored; %s",
		raw1, raw2, name1, name2, fix)
}

// readError classifies an error from reading the body. The client is at fault for a body
// that is cut short or malformed, so those are ErrInvalid; a cancelled ctx is passed on.
func readError(ctx context.Context, err error) error {
	var mbe *http.MaxBytesError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("upload: %w", ctx.Err())
	case errors.As(err, &mbe):
		return errs.New(ErrTooLarge, map[string]any{"limit_bytes": mbe.Limit},
			"the upload is larger than the %s limit for one request; upload fewer or smaller files", formatSize(mbe.Limit))
	case errors.As(err, new(sourceError)):
		// A staged file's read failed (CopyFiles): the server's, not the client's.
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errs.New(ErrInvalid, nil,
			"the upload ended before its closing multipart boundary; send the whole multipart/form-data body again")
	}
	// The reader's own words quote the client's bytes and name library internals, so the
	// client gets a sentence of ours; the log has the request's details.
	if _, ok := errors.AsType[textproto.ProtocolError](err); ok || strings.Contains(err.Error(), "MIME header") {
		return errs.New(ErrInvalid, nil,
			"a part's header of the multipart/form-data upload is malformed (a field or file name may not hold a NUL byte or a line break); fix it and send the upload again")
	}
	return errs.New(ErrInvalid, nil, "the upload is not well-formed multipart/form-data; send the whole body again")
}

// formatSize formats a byte count in decimal units, as "20 MB" or "1.5 kB", cut (not
// rounded) to two decimals. It is written here because go-humanize prints "5.0 MB" for
// the round values that limits usually are.
func formatSize(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	div, i := int64(1), 0
	for n/div >= 1000 && i < len(units)-1 {
		div *= 1000
		i++
	}
	s := fmt.Sprint(n / div)
	if frac := n % div / max(div/100, 1); div > 1 && frac > 0 {
		s += strings.TrimRight(fmt.Sprintf(".%02d", frac), "0")
	}
	return s + " " + units[i]
}

// ReadRequest reads the multipart body of r into dir as Read does. A request with no body
// and no content type is an upload of nothing.
func ReadRequest(r *http.Request, dir string, lim Limits, opts Options) (Form, error) {
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return Form{}, nil
	}
	mr, err := MultipartReader(r)
	if err != nil {
		return Form{}, errs.New(ErrInvalid, nil, "send multipart/form-data with fields files (any number) and inputs (a JSON object), or application/json {\"inputs\": {…}, \"file_keys\": [staged file keys]}")
	}
	return Read(r.Context(), mr, dir, lim, opts)
}
