package runjob

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/contract"
)

// Artifact is a file a run left in /work/output, kept in the blob store until the
// janitor expires it (SKRIP_RUN_ARTIFACTS_TTL): then its key is gone and ExpiredAt says
// when.
type Artifact struct {
	Path      string     `json:"path"` // "output/<relative path>"
	Name      string     `json:"name"`
	Bytes     int64      `json:"bytes"`
	SHA256    string     `json:"sha256"`
	Key       string     `json:"key,omitempty"`
	ExpiredAt *time.Time `json:"expired_at,omitempty"`
}

// MaxArtifacts caps how many files of one run are kept.
const MaxArtifacts = 500

// Skipped gathers the entries of /work/output of one kind that were not kept, so that a
// tool leaving thousands of them gets one notice naming a few, not one notice each.
type Skipped struct {
	names []string // the first few, in walk order
	count int
}

const namesPerNotice = 5

// Add counts rel, a path under /work/output, as not kept.
func (k *Skipped) Add(rel string) {
	if len(k.names) < namesPerNotice {
		k.names = append(k.names, "output/"+rel)
	}
	k.count++
}

// Count is how many were not kept.
func (k *Skipped) Count() int { return k.count }

// List names the first few and counts the rest, for a notice.
func (k *Skipped) List() string {
	list := strings.Join(k.names, ", ")
	if more := k.count - len(k.names); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return list
}

// notice says what was skipped and why, or nothing when nothing was.
func (k *Skipped) notice(why string) []contract.Output {
	if k.count == 0 {
		return nil
	}
	return []contract.Output{contract.Notice("warning", "Not kept as artifacts: %s (%s).", k.List(), why)}
}

// Room is where a run's artifacts reserve their bytes before they are stored: the
// user's quota, on the node that records the run (run.Quota).
type Room interface {
	// Reserve reports for each of arts, in order, whether it may be stored.
	Reserve(ctx context.Context, arts []Planned) ([]bool, error)
	// Release gives back n bytes reserved for artifacts that were not stored after all.
	Release(ctx context.Context, n int64)
	// Notice says which artifacts did not fit, or nothing.
	Notice() []contract.Output
}

// Collect stores the regular files under dir in blobs as a run's artifacts, at keys
// under prefix ("runs/<run>/output/"). Symlinks, devices
// and anything else are not kept, nor files past the first MaxArtifacts, nor files that
// do not fit in q (nil: no quota, as on a worker, whose API node applies it); one notice
// per kind names them: nothing is dropped silently, and no tool can grow the run's
// record by leaving many files behind. The files' room is reserved in q all at once,
// before any is stored.
func Collect(ctx context.Context, blobs blob.Store, prefix, dir string, q Room) ([]Artifact, []contract.Output, error) {
	if q == nil {
		q = noQuota{}
	}
	var files []Planned
	var links, special, over Skipped
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			return nil
		case info.Mode()&os.ModeSymlink != 0:
			links.Add(rel)
		case !info.Mode().IsRegular():
			special.Add(rel)
		case len(files) == MaxArtifacts:
			over.Add(rel)
		default:
			files = append(files, Planned{Path: "output/" + rel, Bytes: info.Size()})
		}
		return nil
	})
	var arts []Artifact
	if err == nil {
		arts, err = storeAll(ctx, blobs, prefix, dir, files, q)
	}
	var notices []contract.Output
	notices = append(notices, links.notice("symbolic links; only regular files are kept")...)
	notices = append(notices, special.notice("not regular files")...)
	notices = append(notices, over.notice(fmt.Sprintf("a run keeps at most %d artifacts", MaxArtifacts))...)
	notices = append(notices, q.Notice()...)
	return arts, notices, err
}

// noQuota is the Room of a run whose quota another node applies: everything fits.
type noQuota struct{}

func (noQuota) Reserve(_ context.Context, arts []Planned) ([]bool, error) {
	ok := make([]bool, len(arts))
	for i := range ok {
		ok[i] = true
	}
	return ok, nil
}
func (noQuota) Release(context.Context, int64) {}
func (noQuota) Notice() []contract.Output      { return nil }

// storeAll reserves room in q for files, the regular files found under dir, and stores
// those that fit in blobs under prefix. When one cannot be stored, what was reserved
// for it and the ones after it is given back.
func storeAll(ctx context.Context, blobs blob.Store, prefix, dir string, files []Planned, q Room) ([]Artifact, error) {
	fits, err := q.Reserve(ctx, files)
	if err != nil {
		return nil, err
	}
	var arts []Artifact
	for i, pl := range files {
		if !fits[i] {
			continue
		}
		a, err := storeOne(ctx, blobs, fmt.Sprintf("%s%04d-", prefix, len(arts)), dir, pl)
		if err != nil {
			var left int64
			for j := i; j < len(files); j++ {
				if fits[j] {
					left += files[j].Bytes
				}
			}
			q.Release(ctx, left)
			return arts, err
		}
		arts = append(arts, a)
	}
	return arts, nil
}

// storeOne stores the file pl under dir in blobs, at keyPrefix and its base name.
func storeOne(ctx context.Context, blobs blob.Store, keyPrefix, dir string, pl Planned) (Artifact, error) {
	rel := strings.TrimPrefix(pl.Path, "output/")
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return Artifact{}, err
	}
	defer f.Close()
	key := keyPrefix + blob.SafeSegment(filepath.Base(rel))
	// The sandbox has ended: the file keeps the size it was reserved at.
	bi, err := blobs.Put(ctx, key, io.LimitReader(f, pl.Bytes), blob.PutOptions{ContentType: ContentType(rel)})
	if err != nil {
		return Artifact{}, fmt.Errorf("storing %s: %w", pl.Path, err)
	}
	return Artifact{Path: pl.Path, Name: filepath.Base(rel), Bytes: bi.Size,
		SHA256: strings.TrimPrefix(bi.Checksum, "sha256:"), Key: key}, nil
}

// Planned is an artifact to reserve room for: its path ("output/…") and size.
type Planned struct {
	Path  string
	Bytes int64
}

// ContentType is the media type an artifact named name is served with.
func ContentType(name string) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}
