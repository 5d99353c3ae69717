package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
)

// Staged is a file staged into a workspace.
type Staged struct {
	Path     string // relative to /workspace
	Size     int64
	Checksum string // sha256:<hex>
}

// Stage streams the caller's staged file under key into path dest of the caller's sandbox
// id. The staging area's reader checks the bytes against the file's size and checksum as
// they pass, read in order from the first: a file that does not match fails its last read,
// and never lands in the workspace.
func (s *Service) Stage(ctx context.Context, caller store.User, id, key, dest string) (Staged, error) {
	clean, err := runner.CleanPath(dest)
	if err != nil {
		return Staged{}, err
	}
	if _, err := s.files.Get(ctx, caller.ID, key); err != nil {
		return Staged{}, err
	}
	var f store.File
	err = s.do(ctx, caller, id, func(ctx context.Context, b store.Sandbox) error {
		// The version open now is the one staged, whatever is uploaded under key meanwhile.
		r, err := s.files.Open(ctx, caller.ID, key)
		if err != nil {
			return err
		}
		defer r.Close()
		f = r.File
		// Read only, in order: a reader that seeks would read bytes nobody checks.
		_, err = s.boxesOf(b).WriteFile(ctx, id, clean, struct{ io.Reader }{r})
		return err
	})
	if err != nil {
		return Staged{}, err
	}
	return Staged{Path: clean, Size: f.Size, Checksum: f.Checksum}, nil
}

// PublishRequest names a workspace file to publish and where.
type PublishRequest struct {
	Source string // relative to /workspace
	Key    string // "" gets files/f_<ULID>
	TTL    string // as sent (90m, 24h, 7d): "" keeps the file until it is deleted
	// Cond is the publish's condition on the file under Key (If-Match, If-None-Match),
	// checked atomically with the commit as for any staged write.
	Cond staging.Cond
}

// Publish streams the file at req.Source of the caller's sandbox id into the file
// staging area as a file of the caller's, through its intake (staging.Intake): its length
// is declared, so a file over a limit is refused before a byte moves, and one that
// changes while it is read stores nothing. The stored file's checksum is checked against
// the bytes read from the workspace.
func (s *Service) Publish(ctx context.Context, caller store.User, id string, req PublishRequest) (store.File, error) {
	clean, err := runner.CleanPath(req.Source)
	if err != nil {
		return store.File{}, err
	}
	var f store.File
	err = s.do(ctx, caller, id, func(ctx context.Context, b store.Sandbox) error {
		rc, size, err := s.boxesOf(b).ReadFile(ctx, id, clean)
		if err != nil {
			return err
		}
		defer rc.Close()
		h := sha256.New()
		f, err = s.files.Receive(ctx, staging.Intake{OwnerID: caller.ID, Key: req.Key, Name: path.Base(clean), TTL: req.TTL, Size: size, Cond: req.Cond},
			io.TeeReader(rc, h))
		if err != nil {
			return err
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != f.Checksum {
			s.files.Delete(context.WithoutCancel(ctx), caller.ID, f.Key)
			return fmt.Errorf("publishing %s: the staged copy (%d bytes, %s) differs from the workspace file (%d bytes, %s)", clean, f.Size, f.Checksum, size, got)
		}
		return nil
	})
	if err != nil {
		return store.File{}, err
	}
	return f, nil
}
