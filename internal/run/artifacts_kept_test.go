package run_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// halfTool writes a file to its output, then fails.
const halfTool = `
import os
def run_tool(input_dir, output_dir):
    open(os.path.join(output_dir, "halv.csv"), "w").write("a;b\n")
    raise ValueError("halvvägs")
`

// TestFailedRunKeepsNoArtifacts: as in the original hub, a failed run keeps none of what
// its tool wrote, and its blobs are deleted; a failed run in the editor sandbox keeps
// them for the author.
func TestFailedRunKeepsNoArtifacts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, 1, 4)
		for _, tc := range []struct {
			context string
			kept    int
		}{{"default", 0}, {"sandbox:v_1", 1}} {
			dir, err := e.svc.NewInputDir()
			if err != nil {
				t.Fatal(err)
			}
			req := e.req
			req.InputDir, req.Context, req.Version.Source = dir, tc.context, halfTool
			r, err := e.svc.Submit(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			r = e.final(t, r.ID)
			if r.Status != store.StatusFailed || r.ErrorSummary != "Tool execution failed (ValueError)." {
				t.Fatalf("%s: %s, %q", tc.context, r.Status, r.ErrorSummary)
			}
			var arts []run.Artifact
			if err := json.Unmarshal([]byte(r.Artifacts), &arts); err != nil || len(arts) != tc.kept {
				t.Errorf("%s: artifacts %s (%v), want %d", tc.context, r.Artifacts, err, tc.kept)
			}
			if tc.kept == 0 && r.HeldBytes != int64(len(r.Outputs)+len(r.NextActions)+len(r.Stdout)+len(r.Stderr)) {
				t.Errorf("%s: the run holds %d bytes, its artifacts counted", tc.context, r.HeldBytes)
			}
			var blobs []string
			filepath.WalkDir(e.blobDir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.Contains(filepath.ToSlash(p), "/runs/"+r.ID+"/") {
					blobs = append(blobs, p)
				}
				return nil
			})
			if len(blobs) != tc.kept {
				t.Errorf("%s: blobs %v, want %d", tc.context, blobs, tc.kept)
			}
		}
	})
}
