package hashcopy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
)

// ErrMismatch is bytes whose SHA-256 is not the one recorded for them: they were changed
// on disk or in the store after they were written.
var ErrMismatch = errors.New("the bytes do not match their recorded checksum")

// Check hashes a stream of a known size as it is read and compares the sum with the
// recorded one when the last byte arrives. Readers give a mismatch as an error in place
// of the stream's last bytes, so a reader of the whole stream never takes wrong bytes for
// a whole, good file.
type Check struct {
	h    hash.Hash
	want []byte
	size int64
	n    int64
}

// NewCheck returns a Check of a stream of size bytes whose SHA-256 is sum: lowercase hex,
// with or without a "sha256:" prefix. A sum that is not one (none recorded) gives nil,
// and a nil Check checks nothing.
func NewCheck(size int64, sum string) *Check {
	want, err := hex.DecodeString(strings.TrimPrefix(sum, "sha256:"))
	if err != nil || len(want) != sha256.Size {
		return nil
	}
	return &Check{h: sha256.New(), want: want, size: size}
}

// Add takes the next bytes of the stream. It returns ErrMismatch when they complete the
// stream and its sum is not the recorded one, or when they run past its size.
func (c *Check) Add(b []byte) error {
	if c == nil {
		return nil
	}
	c.h.Write(b)
	c.n += int64(len(b))
	switch {
	case c.n > c.size:
		return fmt.Errorf("%w: more than the %d bytes recorded", ErrMismatch, c.size)
	case c.n == c.size:
		if got := c.h.Sum(nil); !bytes.Equal(got, c.want) {
			return fmt.Errorf("%w: sha256:%x read, sha256:%x recorded", ErrMismatch, got, c.want)
		}
	}
	return nil
}

// Verify returns a reader of r, a stream of size bytes whose SHA-256 is sum (as NewCheck
// takes it). Its last Read returns ErrMismatch instead of the last bytes when the sum is
// not the recorded one, and io.ErrUnexpectedEOF when r ends short of size.
func Verify(r io.Reader, size int64, sum string) io.Reader {
	return &verifier{r: r, c: NewCheck(size, sum), size: size}
}

type verifier struct {
	r    io.Reader
	c    *Check
	size int64
	n    int64
	err  error
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	v.n += int64(n)
	if cerr := v.c.Add(p[:n]); cerr != nil {
		v.err = cerr
		return 0, cerr
	}
	if errors.Is(err, io.EOF) && v.n < v.size {
		v.err = fmt.Errorf("%w: %d of %d bytes", io.ErrUnexpectedEOF, v.n, v.size)
		return n, v.err
	}
	return n, err
}
