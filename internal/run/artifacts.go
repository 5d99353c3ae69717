package run

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/contract"
)

// Artifact is a file a run left in /work/output, kept in the blob store.
type Artifact struct {
	Path   string `json:"path"` // "output/<relative path>"
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	Key    string `json:"key"`
}

// maxArtifacts caps how many files of one run are kept.
const maxArtifacts = 500

// collect stores the regular files under dir as the run's artifacts. Symlinks, devices
// and anything else are not kept, and each one is reported in a notice: nothing is
// dropped silently.
func (s *Service) collect(ctx context.Context, runID, dir string) ([]Artifact, []contract.Output, error) {
	var arts []Artifact
	var notices []contract.Output
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
			notices = append(notices, contract.Notice("warning", "output/%s is a symbolic link; only regular files are kept as artifacts", rel))
			return nil
		case !info.Mode().IsRegular():
			notices = append(notices, contract.Notice("warning", "output/%s is not a regular file and was not kept", rel))
			return nil
		case len(arts) == maxArtifacts:
			notices = append(notices, contract.Notice("warning", "output/%s was not kept: a run keeps at most %d artifacts", rel, maxArtifacts))
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		key := fmt.Sprintf("runs/%s/output/%04d-%s", runID, len(arts), blob.SafeSegment(filepath.Base(rel)))
		bi, err := s.blobs.Put(ctx, key, f, blob.PutOptions{ContentType: contentType(rel)})
		if err != nil {
			return fmt.Errorf("storing output/%s: %w", rel, err)
		}
		arts = append(arts, Artifact{Path: "output/" + rel, Name: filepath.Base(rel), Bytes: bi.Size,
			SHA256: strings.TrimPrefix(bi.Checksum, "sha256:"), Key: key})
		return nil
	})
	return arts, notices, err
}

// ArtifactURL is where the API serves the artifact at path ("output/<name>") of run
// runID, each segment escaped.
func ArtifactURL(runID, path string) string {
	return "/api/v1/runs/" + runID + "/artifacts/" + (&url.URL{Path: path}).EscapedPath()
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
