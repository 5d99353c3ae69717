package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/wire"
)

const mib = 1 << 20

// fillTool leaves inputs' "files" files of "mib" MiB each in /work/output.
const fillTool = `
import os, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    inp = tk.inputs()
    n, size = int(inp.get("files", 1)), int(inp.get("mib", 1))
    for i in range(n):
        with open(os.path.join(output_dir, "part%d.bin" % i), "wb") as f:
            f.write(b"x" * (size << 20))
    return "wrote %d" % n
`

// quotaServer starts a server of backend b with a 40 MiB quota per user and a user who
// already holds a 30 MiB staged file.
func quotaServer(t *testing.T, b apptest.Backend, tune func(*config.Config)) (*apptest.Env, string) {
	t.Helper()
	cfg := apptest.Config(t, b)
	cfg.FilesUserQuotaBytes = 40 * mib
	cfg.FilesMaxFileBytes = 32 * mib
	if tune != nil {
		tune(&cfg)
	}
	env := apptest.Start(t, cfg)
	publish(t, env, "fill", fillTool)
	_, u := env.User(t, "ulla", "user")
	if a := send(t, env, "PUT", "/api/v1/files/files/big.bin", u.Token, "application/octet-stream", strings.NewReader(strings.Repeat("b", 30*mib))); a.status != 201 && a.status != 200 {
		t.Fatalf("staging 30 MiB: %d %s", a.status, a.raw)
	}
	return env, u.Token
}

func usageOf(t *testing.T, env *apptest.Env, token string) wire.Usage {
	t.Helper()
	a := call(t, env, "GET", "/api/v1/me", token, nil)
	if a.status != 200 {
		t.Fatalf("GET /me: %d %s", a.status, a.raw)
	}
	var me wire.Me
	if err := json.Unmarshal([]byte(a.raw), &me); err != nil {
		t.Fatal(err)
	}
	if me.Usage.Quota == 0 {
		t.Fatalf("GET /me has no usage: %s", a.raw)
	}
	return me.Usage
}

func fillRun(t *testing.T, env *apptest.Env, token string, files, size int) wire.Run {
	t.Helper()
	a := runUpload(t, env, token, "fill", nil, nil, fmt.Sprintf(`{"files":%d,"mib":%d}`, files, size), "?wait=120s")
	if a.status != 201 {
		t.Fatalf("run: %d %s", a.status, a.raw)
	}
	var r wire.Run
	if err := json.Unmarshal([]byte(a.raw), &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "succeeded" {
		t.Fatalf("run %s: %s", r.Status, a.raw)
	}
	return r
}

// TestRunArtifactsKeepWhatFits: a user at 30 MiB of a 40 MiB quota runs a tool writing
// four 3 MiB files: the run keeps three, drops the fourth with a notice naming the
// numbers, and the user's usage stays within the quota, by kind on GET /me. When the
// artifacts expire, the usage goes down again. On fs and NATS, and through a cluster's
// queue (dispatch copies the artifacts).
func TestRunArtifactsKeepWhatFits(t *testing.T) {
	bs := append(append([]apptest.Backend{}, apptest.BlobBackends...), apptest.ClusterBackend)
	apptest.EachOf(t, bs, func(t *testing.T, b apptest.Backend) {
		env, tok := quotaServer(t, b, func(c *config.Config) { c.RunArtifactsTTL = 2 * time.Second })
		r := fillRun(t, env, tok, 4, 3)
		if len(r.Artifacts) != 3 {
			t.Errorf("kept %d artifacts, want 3 (9 MiB beside 30 MiB of a 40 MiB quota): %+v", len(r.Artifacts), r.Artifacts)
		}
		var notice string
		for _, o := range r.Outputs {
			if o.Kind == "notice" && strings.Contains(o.Message, "quota is 40 MiB") {
				notice = o.Message
			}
		}
		if !strings.Contains(notice, "kept 9 MiB of artifacts and dropped 3 MiB (output/part3.bin)") {
			t.Errorf("no notice naming what was kept and dropped: %+v", r.Outputs)
		}
		u := usageOf(t, env, tok)
		if u.Files != 30*mib || u.Runs < 9*mib || u.Total > u.Quota || u.Total != u.Files+u.Versions+u.Uploads+u.Runs+u.SessionFiles+u.Retained {
			t.Errorf("usage %+v: want 30 MiB of files, the run's 9 MiB, within the quota", u)
		}
		// A second run finds no room: it keeps nothing and says so.
		r = fillRun(t, env, tok, 1, 2)
		if len(r.Artifacts) != 0 {
			t.Errorf("a run past the quota kept %+v", r.Artifacts)
		}
		// The janitor expires the artifacts: their bytes no longer count.
		time.Sleep(2500 * time.Millisecond)
		if _, err := env.Admin.Cleanup(context.Background()); err != nil {
			t.Fatal(err)
		}
		if u := usageOf(t, env, tok); u.Runs != 0 || u.Total != 30*mib {
			t.Errorf("after the artifacts expired: %+v, want 30 MiB of files and nothing else", u)
		}
	})
}

// TestConcurrentRunsShareTheQuota: four runs at once, each writing 4 MiB, beside 30 MiB
// of a 40 MiB quota: together they keep no more than the 10 MiB left.
func TestConcurrentRunsShareTheQuota(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env, tok := quotaServer(t, b, func(c *config.Config) { c.RunnerConcurrency = 4 })
		var mu sync.Mutex
		var kept int64
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := fillRun(t, env, tok, 1, 4)
				mu.Lock()
				defer mu.Unlock()
				for _, a := range r.Artifacts {
					kept += a.Bytes
				}
			}()
		}
		wg.Wait()
		if kept > 10*mib || kept < 4*mib {
			t.Errorf("4 runs at once kept %d MiB beside 30 MiB of a 40 MiB quota; want 4 or 8", kept/mib)
		}
		if u := usageOf(t, env, tok); u.Total > u.Quota {
			t.Errorf("usage %+v passes the quota", u)
		}
	})
}

// TestSessionFilesCount: an initial run's uploads become the session's files and count;
// a run whose uploads do not fit is refused with 507 before anything runs, and the
// session keeps its files.
func TestSessionFilesCount(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env, tok := quotaServer(t, b, nil)
		small := strings.Repeat("s", 2*mib)
		if a := runUpload(t, env, tok, "fill", []string{"a.bin"}, []string{small}, `{"files":0}`, "?wait=60s"); a.status != 201 {
			t.Fatalf("run with 2 MiB: %d %s", a.status, a.raw)
		}
		if u := usageOf(t, env, tok); u.SessionFiles != 2*mib {
			t.Errorf("session files after a 2 MiB upload: %+v", u)
		}
		big := strings.Repeat("b", 5*mib)
		a := runUpload(t, env, tok, "fill", []string{"a.bin", "b.bin"}, []string{big, big}, `{"files":0}`, "?wait=60s")
		if a.status != http.StatusInsufficientStorage || a.errCode() != "quota_exceeded" || !strings.Contains(a.errMessage(), "(10 MiB) do not fit in your 40 MiB quota") {
			t.Fatalf("run with 10 MiB of files beside 32 MiB: %d %s", a.status, a.raw)
		}
		if u := usageOf(t, env, tok); u.SessionFiles != 2*mib {
			t.Errorf("a refused run changed the session's files: %+v", u)
		}
		var runs wire.RunList
		if err := env.Client(t, tok).Do(context.Background(), "GET", "/api/v1/runs", nil, &runs); err != nil || len(runs.Runs) != 1 {
			t.Errorf("runs after a refusal: %+v %v; want the first alone", runs, err)
		}
	})
}

// TestOverwritesHoldNoMoreThanTheQuota: overwriting a 10 MiB file ten times under a 40
// MiB quota never holds more than the quota, old bytes waiting to be freed included.
func TestOverwritesHoldNoMoreThanTheQuota(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env, tok := quotaServer(t, b, nil)
		body := strings.Repeat("o", 8*mib)
		for i := range 10 {
			if a := send(t, env, "PUT", "/api/v1/files/files/big.bin", tok, "application/octet-stream", strings.NewReader(body)); a.status != 201 && a.status != 200 {
				t.Fatalf("overwrite %d: %d %s", i, a.status, a.raw)
			}
			// The user's retained bytes are all the store holds: one user.
			if u := usageOf(t, env, tok); u.Total > u.Quota || u.Files+u.Retained > u.Quota {
				t.Fatalf("after overwrite %d: usage %+v: past the 40 MiB quota", i, u)
			}
		}
		// A delete moves the bytes to retained; they still count until freed.
		if a := call(t, env, "DELETE", "/api/v1/files/files/big.bin", tok, nil); a.status != 204 {
			t.Fatalf("delete: %d %s", a.status, a.raw)
		}
		if u := usageOf(t, env, tok); u.Files != 0 || u.Retained < 8*mib {
			t.Errorf("after the delete: %+v; want no files and the old bytes retained", u)
		}
	})
}
