package upload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"

	"github.com/skrip-dev/skrip/internal/errs"
)

// bodyBufBytes is the read buffer under a multipart body. mime/multipart reads through a
// 4 KiB buffer of its own; without this one every 4 KiB of an upload was a read from the
// socket, and the syscalls cost more than the parsing. With it the socket is read in
// large chunks and mime/multipart refills from memory.
const bodyBufBytes = 256 << 10

// Reader is a multipart body read through a large buffer. It also watches for the end of
// the body: mime/multipart stops at the closing boundary, and a body that goes on past
// it, or whose transport framing (Content-Length, chunks) ends short after it, is not the
// body the client meant to send.
type Reader struct {
	mr   *multipart.Reader
	scan *closeScan    // what mime/multipart read, watched for the closing boundary
	rest *bufio.Reader // the body under scan, to read what mime/multipart left unread
}

// NewReader reads the multipart body r with the given boundary.
func NewReader(r io.Reader, boundary string) *Reader {
	buf := bufio.NewReaderSize(r, bodyBufBytes)
	scan := &closeScan{r: buf, marker: []byte("\n--" + boundary + "--"), carry: []byte("\n")}
	return &Reader{mr: multipart.NewReader(scan, boundary), scan: scan, rest: buf}
}

// MultipartReader is http.Request.MultipartReader reading the body through a large
// buffer. It takes what that takes (multipart/form-data and multipart/mixed) and fails as
// that does: http.ErrNotMultipart for another content type, http.ErrMissingBoundary for
// one without a boundary.
func MultipartReader(r *http.Request) (*Reader, error) {
	v := r.Header.Get("Content-Type")
	if v == "" {
		return nil, http.ErrNotMultipart
	}
	if r.Body == nil {
		return nil, errors.New("missing form body")
	}
	d, params, err := mime.ParseMediaType(v)
	if err != nil || (d != "multipart/form-data" && d != "multipart/mixed") {
		return nil, http.ErrNotMultipart
	}
	boundary, ok := params["boundary"]
	if !ok {
		return nil, http.ErrMissingBoundary
	}
	return NewReader(r.Body, boundary), nil
}

// maxEpilogue is the most a body may hold after its closing boundary: blanks and a line
// break ending the boundary line, then one more line break. RFC 2046 allows an epilogue
// there, but nothing a client means to upload is in it, and bytes after the end are more
// likely two bodies run together, or a framing error, than an epilogue.
const maxEpilogue = 16

// end reads the body past the closing boundary to its end. It fails if more than line
// breaks follow the boundary, or if the body ends short of its framing (the transport
// reports that as a failed read). mime/multipart reads ahead through a buffer of its
// own, so what follows the boundary is what it read past the boundary, then the rest.
func (r *Reader) end(ctx context.Context) error {
	rest, err := io.ReadAll(io.LimitReader(r.rest, maxEpilogue+1))
	if errors.Is(err, io.ErrUnexpectedEOF) && ctx.Err() == nil {
		return errs.New(ErrInvalid, nil,
			"the upload ended short of its Content-Length after its closing multipart boundary; send the whole body again")
	}
	if err != nil {
		return readError(ctx, err)
	}
	after := append(r.scan.after, rest...)
	if !r.scan.found || r.scan.more || !blankEpilogue(after) {
		return errs.New(ErrInvalid, nil,
			"the upload has bytes after its closing multipart boundary; send one multipart/form-data body that ends with its closing boundary")
	}
	return nil
}

// blankEpilogue reports whether b, what follows "--boundary--", is only the blanks and
// line break that may end the boundary line and at most one more line break.
func blankEpilogue(b []byte) bool {
	b = bytes.TrimLeft(b, " \t")
	for _, nl := range []string{"\r\n", "\n"} {
		if rest, ok := bytes.CutPrefix(b, []byte(nl)); ok {
			b = rest
			break
		}
	}
	b, _ = bytes.CutPrefix(b, []byte("\r\n"))
	return len(b) == 0
}

// closeScan passes a body through and finds its closing boundary: the first "--" boundary
// "--" at the start of a line. No part's bytes can hold it, since mime/multipart ends a
// part at a line break followed by "--" boundary. (A body with bare "\n" inside a part
// while it breaks lines with "\r\n" could match early; then its own boundary is in its
// data, and it is refused as having bytes after the end.) It keeps the first few bytes
// after the boundary, which mime/multipart read ahead but did not use.
type closeScan struct {
	r      io.Reader
	marker []byte // "\n--" boundary "--"
	carry  []byte // the last len(marker)-1 bytes read before the marker; first the start of the body as a line start
	head   []byte // scratch: carry and the start of the latest read
	found  bool   // the marker was read
	after  []byte // up to maxEpilogue bytes read after the marker
	more   bool   // more than maxEpilogue bytes were read after the marker
}

func (s *closeScan) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.see(p[:n])
	return n, err
}

// see looks for the marker in b, the next bytes read, and a marker across the previous
// read's end.
func (s *closeScan) see(b []byte) {
	if s.found {
		s.keep(b)
		return
	}
	m := len(s.marker)
	s.head = append(append(s.head[:0], s.carry...), b[:min(len(b), m-1)]...)
	if i := bytes.Index(s.head, s.marker); i >= 0 {
		s.found = true
		s.keep(b[i+m-len(s.carry):])
		return
	}
	if i := bytes.Index(b, s.marker); i >= 0 {
		s.found = true
		s.keep(b[i+m:])
		return
	}
	// The last m-1 bytes of carry and b together, without joining them: a buffer the
	// size of each read would make the upload's allocations grow with its size.
	if len(b) >= m-1 {
		s.carry = append(s.carry[:0], b[len(b)-(m-1):]...)
		return
	}
	if drop := len(s.carry) + len(b) - (m - 1); drop > 0 {
		s.carry = append(s.carry[:0], s.carry[drop:]...)
	}
	s.carry = append(s.carry, b...)
}

func (s *closeScan) keep(b []byte) {
	room := maxEpilogue - len(s.after)
	if len(b) > room {
		b, s.more = b[:room], true
	}
	s.after = append(s.after, b...)
}
