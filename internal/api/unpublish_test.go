package api_test

import (
	"context"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// POST /api/v1/tools/{tool}/unpublish takes a tool from its users, for its author and
// admins; others get 403, or 404 for a draft they cannot see.
func TestUnpublishRoute(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	anna, annaUser := env.User(t, "anna", "author")
	_, ulf := env.User(t, "ulf", "user")
	if _, _, err := anna.CreateTool(ctx, "brev", "Brev", "", "def run_tool(i, o):\n    return 'x'\n", true); err != nil {
		t.Fatal(err)
	}
	if r := send(t, env, "POST", "/api/v1/tools/brev/unpublish", ulf.Token, "", nil); r.status != 403 {
		t.Fatalf("a user unpublishing: %d %s", r.status, r.raw)
	}
	r := send(t, env, "POST", "/api/v1/tools/brev/unpublish", annaUser.Token, "", nil)
	if r.status != 200 || r.body["published_version_id"] != nil {
		t.Fatalf("the author unpublishing: %d %s", r.status, r.raw)
	}
	if r := send(t, env, "GET", "/api/v1/tools/brev", ulf.Token, "", nil); r.status != 404 {
		t.Fatalf("a user seeing the unpublished tool: %d %s", r.status, r.raw)
	}
	if r := send(t, env, "POST", "/api/v1/tools/brev/runs", ulf.Token, "", nil); r.status != 404 {
		t.Fatalf("a user running the unpublished tool: %d %s", r.status, r.raw)
	}
	if r := send(t, env, "POST", "/api/v1/tools/brev/unpublish", ulf.Token, "", nil); r.status != 404 {
		t.Fatalf("a user unpublishing a draft they cannot see: %d %s", r.status, r.raw)
	}
}
