package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/skrip-dev/skrip/internal/errs"
)

// StreamOptions name the fields of a one-file upload.
type StreamOptions struct {
	FileField  string   // the field holding the file; default "file"
	TextFields []string // small text fields (each at most MaxTextBytes) that may come before the file
}

// Stream is the one file of an upload read by StreamFile.
type Stream struct {
	Fields      map[string]string // the text fields sent before the file
	FileName    string            // the file name as sent, unsanitised; "" when none was sent
	ContentType string            // the part's Content-Type header; "" when none was sent
	Body        io.Reader
}

// StreamFile reads a multipart body of small text fields followed by exactly one file, by
// the rules Read applies, and hands the file to fn as a stream: nothing is buffered. Body
// ends with io.EOF only once the closing boundary after the file has been read. A body cut
// short or malformed, or another part after the file, instead fails Body's last Read with
// an *errs.Error wrapping ErrInvalid, so a store that keeps nothing when its reader fails
// keeps nothing. fn must read Body to its end before it keeps what it read.
//
// Problems with the body itself are *errs.Error values wrapping ErrInvalid or ErrTooLarge:
// a malformed part, an unknown or repeated field, no file, a text field over its cap. A
// cancelled ctx gives ctx's error. An error fn returns is returned as it is.
func StreamFile(ctx context.Context, mr *Reader, opts StreamOptions, fn func(Stream) error) error {
	if opts.FileField == "" {
		opts.FileField = "file"
	}
	fields := map[string]string{}
	for {
		part, err := nextPart(ctx, mr)
		if err == io.EOF {
			return errs.New(ErrInvalid, map[string]any{"field": opts.FileField},
				"the upload has no field named %q; send the file in a multipart/form-data field named %q", opts.FileField, opts.FileField)
		}
		if err != nil {
			return err
		}
		field, filename, _, err := formField(part, opts.FileField)
		if err != nil {
			return err
		}
		switch {
		case field == opts.FileField:
			body := &lastPart{ctx: ctx, part: part, mr: mr, fileField: opts.FileField}
			if err := fn(Stream{Fields: fields, FileName: filename, ContentType: part.Header.Get("Content-Type"), Body: body}); err != nil {
				return err
			}
			if !body.done {
				return fmt.Errorf("upload: the file of field %q was not read to its end", opts.FileField)
			}
			return nil
		case slices.Contains(opts.TextFields, field):
			if _, dup := fields[field]; dup {
				return errs.New(ErrInvalid, map[string]any{"field": field}, "the field %q was sent more than once; send it once", field)
			}
			b, err := textValue(ctx, part, field)
			if err != nil {
				return err
			}
			fields[field] = string(b)
		default:
			return unknownField(field, append(slices.Clone(opts.TextFields), opts.FileField))
		}
	}
}

// lastPart reads the file part and, at its end, reads on to the closing boundary: a field
// after the file would have been ignored, a second file has nowhere to go, and a body with
// no closing boundary was cut short. Each of those fails the read instead of ending it.
type lastPart struct {
	ctx       context.Context
	part      io.Reader
	mr        *Reader
	fileField string
	done      bool  // the closing boundary was read
	err       error // the error every Read returns once the body failed
}

func (l *lastPart) Read(p []byte) (int, error) {
	if l.done {
		return 0, io.EOF
	}
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.part.Read(p)
	switch {
	case err == nil:
		return n, nil
	case !errors.Is(err, io.EOF):
		l.err = readError(l.ctx, err)
		return n, l.err
	}
	next, err := nextPart(l.ctx, l.mr)
	switch {
	case err == io.EOF:
		l.done = true
		return n, io.EOF
	case err != nil:
		l.err = err
	default:
		name, _, _, ferr := formField(next, l.fileField)
		if ferr != nil {
			l.err = ferr
			break
		}
		l.err = errs.New(ErrInvalid, map[string]any{"field": name},
			"the field %q comes after the file: send the other fields before the file field, and one file per request", name)
	}
	return n, l.err
}
