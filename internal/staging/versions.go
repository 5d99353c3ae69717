package staging

import (
	"context"
	"errors"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// File versions (docs/api.md "Versions"): with Limits.Versions above 0, overwriting a key
// keeps the replaced version, up to that many, the newest first. Kept versions count
// against the owner's quota and the store's total, are read by their id, and go with
// their file (deleted, expired); the ones beyond the setting are retired, at the
// overwrite or by the janitor's trim.

// ErrNoVersion means a version id that is none of a live file's versions (404).
var ErrNoVersion = errors.New("file version not found")

// trimBatch is how many versions one trim query retires at most.
const trimBatch = 500

// Versions returns ownerID's live file under key and its kept versions, the newest first.
func (s *Service) Versions(ctx context.Context, ownerID, key string) (store.File, []store.FileVersion, error) {
	f, err := s.Get(ctx, ownerID, key)
	if err != nil {
		return store.File{}, nil, err
	}
	vs, err := s.st.FileVersions(ctx, ownerID, f.Key)
	if err != nil {
		return store.File{}, nil, err
	}
	return f, vs, nil
}

// VersionsIn returns the kept versions of the files in list (one page of List, in key
// order), by key, the newest first.
func (s *Service) VersionsIn(ctx context.Context, ownerID string, list []store.File) (map[string][]store.FileVersion, error) {
	out := map[string][]store.FileVersion{}
	if len(list) == 0 {
		return out, nil
	}
	vs, err := s.st.FileVersionsIn(ctx, ownerID, list[0].Key, list[len(list)-1].Key)
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		out[v.Key] = append(out[v.Key], v)
	}
	return out, nil
}

// Version returns version id of ownerID's live file under key, the current one or a
// kept one, as a File: its size, checksum, type, name, creation and bytes are the
// version's, and its expiry the file's.
func (s *Service) Version(ctx context.Context, ownerID, key, id string) (store.File, error) {
	f, err := s.Get(ctx, ownerID, key)
	if err != nil || id == f.VersionID {
		return f, err
	}
	v, err := s.st.FileVersionByID(ctx, ownerID, f.Key, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.File{}, errs.New(ErrNoVersion, map[string]any{"key": f.Key, "version": id},
			"%s has no version %q; its versions are listed at GET /api/v1/files/%s/versions", f.Key, id, f.Key)
	}
	if err != nil {
		return store.File{}, err
	}
	return store.File{Key: f.Key, OwnerID: f.OwnerID, Size: v.Size, Checksum: v.Checksum, ContentType: v.ContentType,
		OriginalName: v.OriginalName, CreatedAt: v.CreatedAt, ExpiresAt: f.ExpiresAt, BlobKey: v.BlobKey, VersionID: v.ID}, nil
}

// OpenVersion opens version id of ownerID's live file under key, as Open opens the
// current one.
func (s *Service) OpenVersion(ctx context.Context, ownerID, key, id string) (*Reader, error) {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		f, err := s.Version(ctx, ownerID, key, id)
		if err != nil {
			return nil, err
		}
		r, err := s.openVersion(ctx, f)
		if err == nil {
			return r, nil
		}
		if errors.Is(err, blob.ErrNotFound) && attempt < attempts {
			// The bytes went between reading the entry and opening them, which happens
			// only when their grace was cut short: the version was trimmed or its file
			// deleted, which looking again tells.
			continue
		}
		return nil, s.readFailed(ctx, f, 0, err)
	}
}

// freedByOverwrite is how many bytes of ownerID's an overwrite of key frees: the live
// file's and its versions' when none are kept, else the versions it pushes past
// Limits.Versions. It may say less than the commit frees (never more), which only makes
// the upload's limit stricter: the commit checks exactly.
func (s *Service) freedByOverwrite(ctx context.Context, ownerID, key string, now time.Time) int64 {
	old, err := s.st.FileOf(ctx, ownerID, key)
	if err != nil || old.Checksum == "" || (old.ExpiresAt != nil && !old.ExpiresAt.After(now)) {
		return 0
	}
	vs, err := s.st.FileVersions(ctx, ownerID, key)
	if err != nil {
		return 0
	}
	var freed int64
	if s.limits.Versions <= 0 {
		freed = old.Size
	} else {
		// The old file becomes the newest version; the oldest of the rest may go.
		vs = vs[min(len(vs), s.limits.Versions-1):]
	}
	for _, v := range vs {
		freed += v.Size
	}
	return freed
}

// versionsCount is what a quota refusal adds when kept versions count against it.
func (s *Service) versionsCount() string {
	if s.limits.Versions <= 0 {
		return ""
	}
	return " (the previous versions kept of your files count too)"
}

// trimVersions retires the kept versions beyond Limits.Versions (left when the setting
// was lowered) and returns how many.
func (s *Service) trimVersions(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.st.TrimFileVersions(ctx, max(s.limits.Versions, 0), trimBatch, s.now())
		total += n
		if err != nil || n < trimBatch {
			return total, err
		}
	}
}
