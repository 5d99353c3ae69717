package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestExpiredArtifactIsNotLinked: the run page links the files a run left while they are
// kept, and names an expired one with when it expired, without a link that would only
// answer 404.
func TestExpiredArtifactIsNotLinked(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	ada, err := env.App.Store.UserByName(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Admin.CreateTool(ctx, "probe", "Probe", "", "def run_tool(i, o):\n    return 'hej'\n", true); err != nil {
		t.Fatal(err)
	}
	tool, err := env.App.Store.Tool(ctx, "probe")
	if err != nil {
		t.Fatal(err)
	}
	id := ids.New("r")
	arts := `[{"path":"output/kept.pdf","name":"kept.pdf","bytes":10,"sha256":"aa","key":"runs/x/output/kept.pdf"},` +
		`{"path":"output/old.pdf","name":"old.pdf","bytes":20,"sha256":"bb","expired_at":"2026-01-02T03:04:05Z"}]`
	if err := env.App.Store.CreateRun(ctx, store.Run{ID: id, ToolID: tool.ID, VersionID: tool.PublishedVersionID, UserID: ada.ID,
		Context: "default", Kind: "initial", Status: store.StatusSucceeded, Inputs: "{}", Outputs: "[]", NextActions: "[]",
		Artifacts: arts, InputManifest: `{"files":[]}`, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	b.signIn("ada", "a good password")
	status, _, page := b.do("GET", "/runs/"+id, nil, nil)
	if status != http.StatusOK {
		t.Fatalf("run page: %d\n%s", status, page)
	}
	if !strings.Contains(page, `href="/api/v1/runs/`+id+`/artifacts/output/kept.pdf"`) {
		t.Errorf("the kept artifact is not linked:\n%s", page)
	}
	if strings.Contains(page, "artifacts/output/old.pdf") {
		t.Errorf("the expired artifact is linked:\n%s", page)
	}
	if !strings.Contains(page, "data-expired>old.pdf finns inte längre</span>") || !strings.Contains(page, `borttagen <time class="stamp" datetime="2026-01-02T03:04:05Z">2026-01-02 03:04 UTC</time>`) {
		t.Errorf("the expired artifact is not named with when it expired:\n%s", page)
	}
}
