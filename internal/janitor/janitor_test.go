package janitor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

const artifactTool = `
import os
def run_tool(input_dir, output_dir):
    open(os.path.join(output_dir, "new.txt"), "w").write("new bytes")
    return ""  # None would fail the run, as on the original hub
`

// TestArtifactRetention: a run that finished longer ago than SKRIP_RUN_ARTIFACTS_TTL
// loses its artifacts' bytes in the next pass (the run stays, its artifacts say when they
// expired, and downloading one answers 404 saying so), a recent run keeps them, and the
// janitor metric counts what went.
func TestArtifactRetention(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		ctx := context.Background()
		cfg := apptest.Config(t, b)
		cfg.RunArtifactsTTL = 7 * 24 * time.Hour
		env := apptest.Start(t, cfg)
		tool, v, err := env.Admin.CreateTool(ctx, "arts", "Arts", "", artifactTool, true)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := env.Admin.RunFiles(ctx, "arts", nil, nil, time.Minute)
		if err != nil || fresh.Status != "succeeded" || len(fresh.Artifacts) != 1 {
			t.Fatalf("fresh run: %+v, %v", fresh, err)
		}
		// A run that finished eight days ago, with two artifacts in the blob store.
		admin, err := env.App.Store.UserByName(ctx, "admin")
		if err != nil {
			t.Fatal(err)
		}
		oldID := ids.New("r")
		var arts []run.Artifact
		for i, body := range []string{"old bytes", "more old bytes"} {
			key := "runs/" + oldID + "/output/000" + strconv.Itoa(i) + "-old.txt"
			info, err := env.App.Blobs.Put(ctx, key, strings.NewReader(body), blob.PutOptions{ContentType: "text/plain"})
			if err != nil {
				t.Fatal(err)
			}
			arts = append(arts, run.Artifact{Path: "output/old" + strconv.Itoa(i) + ".txt", Name: "old.txt", Bytes: info.Size,
				SHA256: strings.TrimPrefix(info.Checksum, "sha256:"), Key: key})
		}
		artsJSON, _ := json.Marshal(arts)
		finished := time.Now().Add(-8 * 24 * time.Hour)
		if err := env.App.Store.CreateRun(ctx, store.Run{ID: oldID, ToolID: tool.ID, VersionID: v.ID, UserID: admin.ID, Context: "default",
			Kind: "initial", Status: store.StatusSucceeded, Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: string(artsJSON),
			InputManifest: `{"files":[]}`, CreatedAt: finished, StartedAt: &finished, FinishedAt: &finished}); err != nil {
			t.Fatal(err)
		}
		old, err := env.Admin.GetRun(ctx, oldID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := env.Admin.DownloadArtifact(ctx, old.Artifacts[0], &buf); err != nil || buf.String() != "old bytes" {
			t.Fatalf("old artifact before the pass: %q, %v", buf.String(), err)
		}
		before := metric(t, env, "run_artifact")

		rep, err := env.Admin.Cleanup(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Artifacts != 2 || rep.ArtifactRuns != 1 || rep.ArtifactBytes != int64(len("old bytes")+len("more old bytes")) {
			t.Fatalf("cleanup report: %+v; want 2 artifacts of 1 run", rep)
		}
		if got := metric(t, env, "run_artifact") - before; got != 2 {
			t.Errorf(`skrip_janitor_deletions_total{kind="run_artifact"} grew by %v, want 2`, got)
		}
		for _, a := range arts {
			if _, err := env.App.Blobs.Stat(ctx, a.Key); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("expired artifact %s still in the blob store: %v", a.Key, err)
			}
		}
		old, err = env.Admin.GetRun(ctx, oldID, 0)
		if err != nil || old.Status != "succeeded" || len(old.Artifacts) != 2 || old.Artifacts[0].ExpiredAt == nil {
			t.Fatalf("old run after the pass: %+v, %v", old, err)
		}
		resp, err := env.Admin.Request(ctx, http.MethodGet, old.Artifacts[0].URL, nil, nil)
		if err == nil {
			resp.Body.Close()
			t.Fatal("an expired artifact downloaded")
		}
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 404 || !strings.Contains(apiErr.Message, "expired") {
			t.Fatalf("download of an expired artifact: %v; want 404 saying it expired", err)
		}
		buf.Reset()
		if err := env.Admin.DownloadArtifact(ctx, fresh.Artifacts[0], &buf); err != nil || buf.String() != "new bytes" {
			t.Fatalf("the recent run's artifact: %q, %v", buf.String(), err)
		}
		if rep, err := env.Admin.Cleanup(ctx); err != nil || rep.Artifacts != 0 {
			t.Fatalf("second pass: %+v, %v; want nothing more", rep, err)
		}
	})
}

// metric reads skrip_janitor_deletions_total{kind=...} from /metrics.
func metric(t *testing.T, env *apptest.Env, kind string) float64 {
	t.Helper()
	resp, err := http.Get(env.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`skrip_janitor_deletions_total\{kind="` + kind + `"\} (\S+)`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
