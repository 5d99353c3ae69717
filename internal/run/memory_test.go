package run_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/run"
)

// TestRequestMemory: a Request's Memory is the run's /work/memory.json, through the
// service's real runner (bubblewrap), and a Request without it gives "{}".
func TestRequestMemory(t *testing.T) {
	env := apptest.New(t, apptest.Backend{Name: "sqlite", Blob: "fs"})
	ctx := context.Background()
	author, _ := env.User(t, "ada", "author")
	const source = `
from skriptoteket_toolkit import read_settings
def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "json", "value": {"file": open("/work/memory.json").read(), "settings": read_settings()}}]}
`
	created, _, err := author.CreateTool(ctx, "memory", "Memory", "", source, true)
	if err != nil {
		t.Fatal(err)
	}
	st := env.App.Store
	tool, err := st.Tool(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	version, err := st.ToolVersion(ctx, tool.PublishedVersionID)
	if err != nil {
		t.Fatal(err)
	}
	user, err := st.UserByName(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ memory, want string }{
		{`{"settings":{"skola":"Byskolan"}}`, `[{"kind":"json","value":{"file":"{\"settings\":{\"skola\":\"Byskolan\"}}","settings":{"skola":"Byskolan"}}}]`},
		{"", `[{"kind":"json","value":{"file":"{}","settings":{}}}]`},
	} {
		dir, err := env.App.Runs.NewInputDir()
		if err != nil {
			t.Fatal(err)
		}
		var memory []byte
		if tc.memory != "" {
			memory = []byte(tc.memory)
		}
		rn, err := env.App.Runs.Submit(ctx, run.Request{Tool: tool, Version: version, User: user, Context: "default", Kind: "initial",
			InputDir: dir, Memory: memory})
		if err != nil {
			t.Fatal(err)
		}
		done, err := env.App.Runs.Wait(ctx, rn.ID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		json.Unmarshal([]byte(done.Outputs), &got)
		json.Unmarshal([]byte(tc.want), &want)
		if g, _ := json.Marshal(got); string(g) != string(mustMarshal(want)) {
			t.Errorf("memory %q: status %s (%s), outputs %s; want %s\nstderr: %s", tc.memory, done.Status, done.ErrorSummary, done.Outputs, tc.want, done.Stderr)
		}
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
