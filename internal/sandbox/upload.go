package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// An upload's body comes at the client's pace. It is spooled to a file of the server's
// (in SpoolDir, unlinked as soon as it is made, so that nothing of it outlives the
// request or a crash) without holding the sandbox: execs and other operations go on
// meanwhile. Only once every byte is there is the sandbox held, for the copy from the
// spool into the workspace, at the speed of the disk. The spool of a sandbox holds at
// most its workspace quota, so all spools together hold at most the memory budget, on
// disk.

// maxUploads is how many uploads into one sandbox may be under way at once.
const maxUploads = 8

// WriteFile streams body into path p of the caller's sandbox id, whole or not at all.
func (s *Service) WriteFile(ctx context.Context, caller store.User, id, p string, body io.Reader) (string, int64, error) {
	clean, err := runner.CleanPath(p)
	if err != nil {
		return "", 0, err
	}
	b, err := s.Get(ctx, caller, id)
	if err != nil {
		return "", 0, err
	}
	if !s.reachable(b) {
		return "", 0, elsewhere(b)
	}
	e := s.acquire(id)
	defer s.release(id, e)
	if err := s.startUpload(e, id); err != nil {
		return "", 0, err
	}
	// The spooled bytes count until the spool file is closed, after the copy.
	var n int64
	defer func() { s.endUpload(e, n) }()
	spool, n, err := s.spool(ctx, e, b, clean, body)
	if err != nil {
		return "", n, err
	}
	defer spool.Close()
	err = s.do(ctx, caller, id, func(ctx context.Context, b store.Sandbox) error {
		if _, err := spool.Seek(0, io.SeekStart); err != nil {
			return err
		}
		written, err := s.boxesOf(b).WriteFile(ctx, id, clean, io.LimitReader(spool, n))
		if err == nil && written != n {
			err = fmt.Errorf("writing %s: %d of its %d bytes reached the workspace", clean, written, n)
		}
		return err
	})
	if err != nil {
		return "", n, err
	}
	return clean, n, nil
}

// startUpload counts an upload into sandbox id under way, unless it has as many as it
// may.
func (s *Service) startUpload(e *entry, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.uploads >= maxUploads {
		return errs.New(ErrFull, map[string]any{"sandbox_id": id, "max_uploads": maxUploads},
			"sandbox %s has %d uploads under way, the most it may; try again when one has ended", id, maxUploads)
	}
	e.uploads++
	return nil
}

// endUpload counts an upload, which spooled n bytes, as over.
func (s *Service) endUpload(e *entry, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.uploads--
	e.pending -= n
}

// uploading reports whether an upload into e's sandbox is under way: its sandbox is in
// use, even though nothing holds it yet.
func (s *Service) uploading(e *entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.uploads > 0
}

// spool copies body to a new unlinked file and returns it with the bytes copied. It
// refuses a body larger than b's workspace quota, and one that would take the sandbox's
// spooled bytes past that quota. It ends when ctx does, or when the sandbox is
// destroyed.
func (s *Service) spool(ctx context.Context, e *entry, b store.Sandbox, p string, body io.Reader) (*os.File, int64, error) {
	if err := s.st.TouchSandbox(ctx, b.ID, s.now()); err != nil {
		return nil, 0, err
	}
	if err := os.MkdirAll(s.cfg.SpoolDir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("creating the upload spool: %w", err)
	}
	f, err := os.CreateTemp(s.cfg.SpoolDir, "upload-")
	if err != nil {
		return nil, 0, fmt.Errorf("creating an upload spool file: %w", err)
	}
	os.Remove(f.Name())
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(e.ctx, stop)()
	quota := LimitsOf(b).WorkspaceBytes
	if quota <= 0 {
		quota = s.cfg.WorkspaceBytes
	}
	w := &spoolWriter{s: s, e: e, f: f, id: b.ID, path: p, quota: quota}
	_, err = io.Copy(w, runner.ContextReader(ctx, body))
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		f.Close()
		if e.ctx.Err() != nil {
			err = errs.New(ErrNotFound, map[string]any{"sandbox_id": b.ID}, "sandbox %s was deleted while this request used it", b.ID)
		}
		return nil, w.n, err
	}
	return f, w.n, nil
}

// spoolWriter writes to an upload's spool file, counting its bytes against its
// sandbox's quota.
type spoolWriter struct {
	s        *Service
	e        *entry
	f        *os.File
	id, path string
	n, quota int64
}

func (w *spoolWriter) Write(p []byte) (int, error) {
	k := int64(len(p))
	if w.n+k > w.quota {
		return 0, runner.Refuse(runner.ErrNoSpace, "%s does not fit in the workspace's %s", w.path, runner.HumanBytes(w.quota))
	}
	w.s.mu.Lock()
	if w.e.pending+k > w.quota {
		pending := w.e.pending
		w.s.mu.Unlock()
		return 0, errs.New(ErrFull, map[string]any{"sandbox_id": w.id, "pending_bytes": pending, "workspace_bytes": w.quota},
			"the uploads under way into sandbox %s hold %s, and this one does not fit beside them in its %s workspace; try again when they have ended",
			w.id, runner.HumanBytes(pending), runner.HumanBytes(w.quota))
	}
	w.e.pending += k
	w.n += k
	w.s.mu.Unlock()
	n, err := w.f.Write(p)
	if n < len(p) && err == nil {
		err = io.ErrShortWrite
	}
	if err != nil {
		// The cause without the spool file's name, which is the host's.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return n, fmt.Errorf("spooling an upload: %w", err)
	}
	return n, nil
}
