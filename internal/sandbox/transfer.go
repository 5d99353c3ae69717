package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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
// id. The bytes are checked against the file's size and
// checksum as they pass; a file that does not match never lands in the workspace.
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
		_, err = s.boxesOf(b).WriteFile(ctx, id, clean, &verifying{r: r, h: sha256.New(), size: f.Size, checksum: f.Checksum, name: f.Key})
		return err
	})
	if err != nil {
		return Staged{}, err
	}
	return Staged{Path: clean, Size: f.Size, Checksum: f.Checksum}, nil
}

// verifying passes r on and, at its end, fails instead of ending when the bytes were not
// size long or their sha256 is not checksum.
type verifying struct {
	r        io.Reader
	h        hash.Hash
	n, size  int64
	checksum string
	name     string
}

func (v *verifying) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n > v.size {
		return n, fmt.Errorf("%s holds more than its %d bytes", v.name, v.size)
	}
	if errors.Is(err, io.EOF) {
		if v.n != v.size {
			return n, fmt.Errorf("%s ended after %d of its %d bytes", v.name, v.n, v.size)
		}
		if got := "sha256:" + hex.EncodeToString(v.h.Sum(nil)); got != v.checksum {
			return n, fmt.Errorf("%s does not match its checksum (%s, stored %s)", v.name, got, v.checksum)
		}
	}
	return n, err
}

// PublishRequest names a workspace file to publish and where.
type PublishRequest struct {
	Source string // relative to /workspace
	Key    string // "" gets files/f_<ULID>
	TTL    string // as sent (90m, 24h, 7d): "" keeps the file until it is deleted
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
		f, err = s.files.Receive(ctx, staging.Intake{OwnerID: caller.ID, Key: req.Key, Name: path.Base(clean), TTL: req.TTL, Size: size},
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
