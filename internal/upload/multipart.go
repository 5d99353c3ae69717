package upload

import (
	"bufio"
	"errors"
	"mime"
	"mime/multipart"
	"net/http"
)

// bodyBufBytes is the read buffer under a multipart body. mime/multipart reads through a
// 4 KiB buffer of its own; without this one every 4 KiB of an upload was a read from the
// socket, and the syscalls cost more than the parsing. With it the socket is read in
// large chunks and mime/multipart refills from memory.
const bodyBufBytes = 256 << 10

// MultipartReader is http.Request.MultipartReader reading the body through a large
// buffer. It takes what that takes (multipart/form-data and multipart/mixed) and fails as
// that does: http.ErrNotMultipart for another content type, http.ErrMissingBoundary for
// one without a boundary.
func MultipartReader(r *http.Request) (*multipart.Reader, error) {
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
	return multipart.NewReader(bufio.NewReaderSize(r.Body, bodyBufBytes), boundary), nil
}
