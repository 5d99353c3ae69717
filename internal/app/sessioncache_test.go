package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// inodeTool prints the inode and link count of each of its input files, as the
// sandbox sees them.
const inodeTool = `
import os, skrip_toolkit as tk
A = [{"action_id": "next", "label": "Next", "kind": "form", "fields": []}]
def run_tool(input_dir, output_dir):
    for f in tk.input_files():
        st = os.stat(f["path"])
        print("file", f["name"], st.st_ino, st.st_nlink, oct(st.st_mode & 0o777))
    return {"outputs": [], "next_actions": A, "state": {}}
`

func counterValue(c prometheus.Counter) float64 {
	var d dto.Metric
	c.Write(&d)
	return d.GetCounter().GetValue()
}

// TestActionRunLinksSessionFilesOnNATS: with the NATS blob store, an action run's
// /work/input holds hard links of the server's cache of session files: the sandbox sees
// the cache file's inode, read-only, and the blob store is read once for every run.
func TestActionRunLinksSessionFilesOnNATS(t *testing.T) {
	env := apptest.New(t, apptest.Backend{Blob: "nats"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tool, _, err := env.Admin.CreateTool(ctx, "inodes", "Inodes", "", inodeTool, true)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "big.bin")
	body := []byte(strings.Repeat("session ", 1<<18))
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := env.Admin.RunFiles(ctx, "inodes", []string{p}, nil, time.Minute)
	if err != nil || r.StateRev == nil {
		t.Fatalf("initial run: %+v, %v", r, err)
	}
	sum := sha256.Sum256(body)
	entry := filepath.Join(env.Config.DataDir, "cache", "session-files", hex.EncodeToString(sum[:]))
	rev := *r.StateRev
	var inode uint64
	for i := range 3 {
		res, err := env.Admin.StartAction(ctx, tool.ID, "default", "next", nil, rev)
		if err != nil || res.Run.Status != "succeeded" || res.Run.Stdout == nil {
			t.Fatalf("action %d: %+v, %v", i, res, err)
		}
		fi, err := os.Stat(entry)
		if err != nil {
			t.Fatalf("the cache has no file of the session file's checksum: %v", err)
		}
		inode = fi.Sys().(*syscall.Stat_t).Ino
		var ino, nlink uint64
		var mode string
		if _, err := fmt.Sscanf(*res.Run.Stdout, "file big.bin %d %d %s", &ino, &nlink, &mode); err != nil {
			t.Fatalf("action %d printed %q: %v", i, *res.Run.Stdout, err)
		}
		if ino != inode || nlink < 2 || mode != "0o444" {
			t.Fatalf("action %d saw inode %d with %d links, mode %s; the cache's file is inode %d", i, ino, nlink, mode, inode)
		}
		rev = *res.StateRev
	}
	m := env.App.Metrics
	if misses, hits := counterValue(m.SessionCacheMisses), counterValue(m.SessionCacheHits); misses != 1 || hits != 2 {
		t.Fatalf("session cache misses %v, hits %v; want 1 and 2", misses, hits)
	}
}
