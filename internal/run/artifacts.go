package run

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
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

// skipped gathers the entries of /work/output of one kind that were not kept, so that a
// tool leaving thousands of them gets one notice naming a few, not one notice each.
type skipped struct {
	names []string // the first few, in walk order
	count int
}

const namesPerNotice = 5

func (k *skipped) add(rel string) {
	if len(k.names) < namesPerNotice {
		k.names = append(k.names, "output/"+rel)
	}
	k.count++
}

// notice says what was skipped and why, or nothing when nothing was.
func (k *skipped) notice(why string) []contract.Output {
	if k.count == 0 {
		return nil
	}
	list := strings.Join(k.names, ", ")
	if more := k.count - len(k.names); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return []contract.Output{contract.Notice("warning", "Not kept as artifacts: %s (%s).", list, why)}
}

// Collect stores the regular files under dir in blobs as a run's artifacts, at keys
// under prefix ("runs/<run>/output/"). Symlinks, devices
// and anything else are not kept, nor files past the first MaxArtifacts, nor files that
// do not fit in q (nil: no quota, as on a worker, whose API node applies it); one notice
// per kind names them: nothing is dropped silently, and no tool can grow the run's
// record by leaving many files behind. The files' room is reserved in q all at once,
// before any is stored.
func Collect(ctx context.Context, blobs blob.Store, prefix, dir string, q *Quota) ([]Artifact, []contract.Output, error) {
	var files []Planned
	var links, special, over skipped
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
			links.add(rel)
		case !info.Mode().IsRegular():
			special.add(rel)
		case len(files) == MaxArtifacts:
			over.add(rel)
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

// storeAll reserves room in q for files, the regular files found under dir, and stores
// those that fit in blobs under prefix. When one cannot be stored, what was reserved
// for it and the ones after it is given back.
func storeAll(ctx context.Context, blobs blob.Store, prefix, dir string, files []Planned, q *Quota) ([]Artifact, error) {
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

// leftOutNotice says which files of /work/output were not kept because they did not fit
// in its cap (limit), by apparent size.
func leftOutNotice(limit int64, l runner.LeftOut) contract.Output {
	names := make([]string, len(l.Files))
	for i, f := range l.Files {
		names[i] = fmt.Sprintf("output/%s (%s)", f.Path, runner.HumanBytes(f.Bytes))
	}
	list := strings.Join(names, ", ")
	if more := l.Count - len(l.Files); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return contract.Notice("warning", "Artifacts over the output limit (%s) were not kept: %s; %s in all. Files count by their apparent size, holes of sparse files included.",
		runner.HumanBytes(limit), list, runner.HumanBytes(l.Bytes))
}

// LogText returns a run's stdout or stderr as valid UTF-8 text, with a last line saying
// when it was cut.
func LogText(b []byte, truncated bool) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if truncated {
		s += "\n[output truncated: only the first " + strconv.Itoa(len(b)) + " bytes were kept]"
	}
	return s
}
