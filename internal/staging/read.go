package staging

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/hashcopy"
	"github.com/skrip-dev/skrip/internal/store"
)

// headBytes is how much of a file Open reads before it returns, so that a file whose
// bytes cannot be read fails before a caller has answered anything.
const headBytes = 64 << 10

// errShort marks bytes that end before, or go on past, the size the index recorded.
var errShort = errors.New("the stored bytes are not the recorded size")

// Reader reads one version of a staged file: the version File describes, whatever is
// uploaded under its key meanwhile. It is an io.ReadSeeker over the recorded size. A read
// is whole or it fails: bytes that are missing, short or unreadable give an error, never a
// clean io.EOF before the end. Failures are logged and counted when they happen.
//
// Bytes read in order from the first are checked against the recorded checksum: when
// they do not match (the stored bytes were changed after they were written), the read
// that would hand over the last bytes fails instead (ErrUnreadable, reason "checksum").
// A file of at most headBytes is checked by Open, before a caller has answered anything.
// A read that starts elsewhere (a range, a seek) is not checked: the sum is of the whole
// file, and reading the rest of it to check a few bytes would cost what the range saves.
type Reader struct {
	File store.File

	s    *Service
	ctx  context.Context
	rc   io.ReadCloser // the blob, positioned at pos
	pos  int64
	head []byte // the file's first bytes, read by Open
	off  int64  // where the next Read reads
	err  error  // the failure every later Read returns

	check  *hashcopy.Check // the bytes read in order from 0 so far, hashed; nil once a read skipped or went back
	hashed int64           // how many bytes check has seen
}

// Open opens the live file under key in ownerID's files and checks its bytes before it
// returns: they exist, have the recorded size and their first bytes read. A file that is
// replaced meanwhile is opened as one version, never a mix. Bytes that are missing or not
// as recorded give ErrUnreadable (logged at ERROR and counted); a blob store that does
// not answer gives ErrUnavailable.
func (s *Service) Open(ctx context.Context, ownerID, key string) (*Reader, error) {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		f, err := s.Get(ctx, ownerID, key)
		if err != nil {
			return nil, err
		}
		r, err := s.openVersion(ctx, f)
		if err == nil {
			return r, nil
		}
		if errors.Is(err, blob.ErrNotFound) && attempt < attempts {
			// The version's bytes went between reading its entry and opening them, which
			// only happens when their grace was cut short: read the entry again.
			again, gerr := s.Get(ctx, ownerID, key)
			if gerr != nil {
				return nil, gerr
			}
			if again.BlobKey != f.BlobKey {
				continue
			}
		}
		return nil, s.readFailed(ctx, f, 0, err)
	}
}

// openVersion opens f's bytes and reads their head.
func (s *Service) openVersion(ctx context.Context, f store.File) (*Reader, error) {
	rc, info, err := s.blobs.Get(ctx, f.BlobKey, 0, -1)
	if err != nil {
		return nil, err
	}
	size := info.Size
	// A backend's info may come from its own index (fsblob's pointer file): a reader that
	// knows the size of the bytes themselves is asked too.
	if st, ok := rc.(interface{ Stat() (fs.FileInfo, error) }); ok && size == f.Size {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if size != f.Size {
		rc.Close()
		return nil, fmt.Errorf("%w: %d bytes stored, %d recorded", errShort, size, f.Size)
	}
	head := make([]byte, min(f.Size, headBytes))
	n, err := io.ReadFull(rc, head)
	if err != nil {
		rc.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the bytes end after %d of %d", errShort, n, f.Size)
		}
		return nil, err
	}
	r := &Reader{File: f, s: s, ctx: ctx, rc: rc, pos: int64(n), head: head, check: hashcopy.NewCheck(f.Size, f.Checksum)}
	if int64(n) == f.Size {
		// The whole file is read: check it now, before anything is answered.
		if err := hashcopy.NewCheck(f.Size, f.Checksum).Add(head); err != nil {
			rc.Close()
			return nil, err
		}
		r.check = nil
	}
	return r, nil
}

// readFailed logs and counts a failed read of f's bytes at offset off, and returns the
// error a caller answers with. A read stopped by its own ctx (a client that went away) is
// neither logged nor counted.
func (s *Service) readFailed(ctx context.Context, f store.File, off int64, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("reading %s: %w", f.Key, ctx.Err())
	}
	reason := "failed"
	switch {
	case errors.Is(err, blob.ErrNotFound):
		reason = "missing"
	case errors.Is(err, errShort):
		reason = "short"
	case errors.Is(err, hashcopy.ErrMismatch):
		reason = "checksum"
	case off == 0 && s.blobs.Ping(ctx) != nil:
		reason = "unavailable"
	}
	s.metrics.BlobReadErrors.WithLabelValues(reason).Inc()
	s.log.LogAttrs(ctx, slog.LevelError, "reading a staged file's bytes failed", slog.String("reason", reason),
		slog.String("key", f.Key), slog.String("owner", f.OwnerID), slog.String("blob", f.BlobKey),
		slog.Int64("offset", off), slog.Int64("size", f.Size), slog.String("error", err.Error()))
	if reason == "checksum" {
		return errs.New(ErrDamaged, map[string]any{"key": f.Key},
			"checksum mismatch: the stored bytes of %s are not those it was stored with, so they were not sent; report this to an operator", f.Key)
	}
	if reason == "unavailable" {
		return errs.New(ErrUnavailable, map[string]any{"key": f.Key}, "the file store is not answering, so %s cannot be read now; try again shortly", f.Key)
	}
	// Not wrapping err: a missing blob is the server's fault here, not a 404.
	return fmt.Errorf("%w: %s (owner %s, blob %s) at byte %d: %s: %v", ErrUnreadable, f.Key, f.OwnerID, f.BlobKey, off, reason, err)
}

// Read reads the next bytes of the version, up to its recorded size. When they are the
// last bytes of a read in order from the first and the file's checksum does not match,
// it returns the failure instead of them.
func (r *Reader) Read(p []byte) (int, error) {
	start := r.off
	n, err := r.read(p)
	if n > 0 && r.check != nil {
		if start != r.hashed {
			r.check = nil
		} else if cerr := r.check.Add(p[:n]); cerr != nil {
			return 0, r.fail(cerr)
		} else {
			r.hashed += int64(n)
		}
	}
	return n, err
}

// read is Read without the checksum.
func (r *Reader) read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.off >= r.File.Size {
		return 0, io.EOF
	}
	if r.off < int64(len(r.head)) {
		n := copy(p, r.head[r.off:])
		r.off += int64(n)
		return n, nil
	}
	if err := r.position(); err != nil {
		return 0, r.fail(err)
	}
	if left := r.File.Size - r.off; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := r.rc.Read(p)
	r.pos += int64(n)
	r.off += int64(n)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) && r.off < r.File.Size:
		return n, r.fail(fmt.Errorf("%w: the bytes end after %d of %d", errShort, r.off, r.File.Size))
	case errors.Is(err, io.EOF):
		return n, io.EOF
	default:
		return n, r.fail(err)
	}
	return n, nil
}

// position moves the blob reader to off: forward by seeking or skipping, back by opening
// the version's bytes again.
func (r *Reader) position() error {
	if r.pos == r.off {
		return nil
	}
	if r.off > r.pos {
		if sk, ok := r.rc.(io.Seeker); ok {
			if _, err := sk.Seek(r.off, io.SeekStart); err != nil {
				return err
			}
			r.pos = r.off
			return nil
		}
		n, err := io.CopyN(io.Discard, r.rc, r.off-r.pos)
		r.pos += n
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: the bytes end after %d of %d", errShort, r.pos, r.File.Size)
		}
		return err
	}
	r.rc.Close()
	rc, _, err := r.s.blobs.Get(r.ctx, r.File.BlobKey, r.off, -1)
	if err != nil {
		r.rc = io.NopCloser(eofReader{})
		return err
	}
	r.rc, r.pos = rc, r.off
	return nil
}

// fail records err as the reader's failure, logged and counted once.
func (r *Reader) fail(err error) error {
	r.err = r.s.readFailed(r.ctx, r.File, r.off, err)
	return r.err
}

// Seek sets where the next Read reads, as io.Seeker does, within the recorded size.
func (r *Reader) Seek(offset int64, whence int) (int64, error) {
	abs := offset
	switch whence {
	case io.SeekCurrent:
		abs += r.off
	case io.SeekEnd:
		abs += r.File.Size
	}
	if abs < 0 {
		return 0, fmt.Errorf("seek to %d, before the start of %s", abs, r.File.Key)
	}
	r.off = abs
	return abs, nil
}

// Failed returns the error that ended reading, or nil.
func (r *Reader) Failed() error { return r.err }

// Close releases the blob reader.
func (r *Reader) Close() error { return r.rc.Close() }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
