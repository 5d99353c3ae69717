package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// answer is an HTTP answer with its JSON body.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (a answer) errField(name string) string {
	e, _ := a.body["error"].(map[string]any)
	v, _ := e[name].(string)
	return v
}

func send(t *testing.T, env *apptest.Env, method, path, token string, body io.Reader) answer {
	t.Helper()
	req, err := http.NewRequest(method, env.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	json.Unmarshal(b, &a.body)
	return a
}

func createSandbox(t *testing.T, env *apptest.Env, body string) answer {
	t.Helper()
	return send(t, env, "POST", "/api/v1/sandboxes", env.AdminToken, strings.NewReader(body))
}

// The workspaces of all sandboxes together stay within SKRIP_SANDBOX_MEMORY_BUDGET: with
// room for three, 50 creates at once make three sandboxes and the others get 507 naming
// the budget; a delete makes room for one more. Once on each runner.
func TestMemoryBudgetOnBwrap(t *testing.T) { testMemoryBudget(t, "bwrap") }

func TestMemoryBudgetOnDocker(t *testing.T) { testMemoryBudget(t, "docker") }

func testMemoryBudget(t *testing.T, runnerName string) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.Runner = runnerName
	cfg.SandboxWorkspace = 8 << 20
	full := runner.WorkspaceMemory(cfg.SandboxWorkspace) // 8 MiB of files and 2 MiB of metadata
	cfg.SandboxMemoryBudget = 3 * full
	cfg.SandboxUserShare = 1 // the budget itself is under test: one user may take it all
	cfg.SandboxMaxPerUser, cfg.SandboxMaxTotal = 100, 100
	env := apptest.Start(t, cfg)
	ctx := context.Background()
	refused := func(a answer) {
		t.Helper()
		msg := a.errField("message")
		want := runner.HumanBytes(cfg.SandboxMemoryBudget) + " memory budget (SKRIP_SANDBOX_MEMORY_BUDGET)"
		if a.status != http.StatusInsufficientStorage || a.errField("code") != "quota_exceeded" || !strings.Contains(msg, want) {
			t.Errorf("want 507 quota_exceeded naming the %s, got %d %s", want, a.status, a.raw)
		}
	}

	const tries = 50
	answers := make([]answer, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() { answers[i] = createSandbox(t, env, `{}`) })
	}
	wg.Wait()
	var made []string
	for _, a := range answers {
		switch a.status {
		case http.StatusCreated:
			made = append(made, a.body["sandbox_id"].(string))
		case http.StatusInsufficientStorage:
			refused(a)
		default:
			t.Errorf("create: %d %s", a.status, a.raw)
		}
	}
	if len(made) != 3 {
		t.Fatalf("%d of %d creates at once succeeded with room for 3 workspaces", len(made), tries)
	}
	if boxes, _ := env.App.Runner.Boxes(ctx); len(boxes) != 3 {
		t.Errorf("the runner holds %d boxes, want 3", len(boxes))
	}
	if reserved, _ := env.App.Sandboxes.Reserved(ctx); reserved != cfg.SandboxMemoryBudget {
		t.Errorf("reserved %d bytes, want the whole budget of %d", reserved, cfg.SandboxMemoryBudget)
	}

	// A fourth is refused, however small its workspace.
	refused(createSandbox(t, env, `{}`))
	refused(createSandbox(t, env, `{"limits": {"workspace_bytes": 4096}}`))

	// A workspace never holds more than its quota, in bytes or in files, so the budget
	// holds whatever is written.
	big := strings.Repeat("x", int(cfg.SandboxWorkspace)+1)
	if a := send(t, env, "PUT", "/api/v1/sandboxes/"+made[0]+"/fs/big.bin", env.AdminToken, strings.NewReader(big)); a.status != http.StatusInsufficientStorage {
		t.Errorf("a file over the workspace quota: %d %s", a.status, a.raw)
	}
	const touch = "import os\nn = 0\ntry:\n    while n < 5000:\n        open('f%d' % n, 'w').close()\n        n += 1\nexcept OSError as e:\n    print(n, os.strerror(e.errno))\nelse:\n    print(n)\n"
	out := execOut(t, env, made[1], "python3", "-c", touch)
	if inodes := runner.WorkspaceInodes(cfg.SandboxWorkspace); out != fmt.Sprintf("%d No space left on device\n", inodes-1) {
		t.Errorf("empty files made in a workspace of %d files and directories (its root is one): %q", inodes, out)
	}

	if a := send(t, env, "DELETE", "/api/v1/sandboxes/"+made[0], env.AdminToken, nil); a.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	// The deleted sandbox's share is free: a smaller workspace takes part of it, and
	// then a full one no longer fits; the refusal says what would.
	if a := createSandbox(t, env, `{"limits": {"workspace_bytes": 4194304}}`); a.status != http.StatusCreated {
		t.Fatalf("a create after a delete: %d %s", a.status, a.raw)
	}
	a := createSandbox(t, env, `{}`)
	refused(a)
	free := full - runner.WorkspaceMemory(4<<20)
	fits := free - runner.WorkspaceMemory(4096) + runner.WorkspaceSize(4096) // the metadata of a small workspace is fixed
	d, _ := a.body["error"].(map[string]any)["details"].(map[string]any)
	if d["available_bytes"] != float64(free) || d["largest_workspace_bytes"] != float64(fits) ||
		!strings.Contains(a.errField("message"), "at most "+runner.HumanBytes(fits)) {
		t.Errorf("the refusal does not say what is left (%d bytes, a workspace of %d): %s", free, fits, a.raw)
	}
	if a := createSandbox(t, env, fmt.Sprintf(`{"limits": {"workspace_bytes": %d}}`, fits)); a.status != http.StatusCreated {
		t.Fatalf("a create that fits what is left: %d %s", a.status, a.raw)
	}
	if reserved, _ := env.App.Sandboxes.Reserved(ctx); reserved != cfg.SandboxMemoryBudget {
		t.Errorf("reserved %d bytes, want the whole budget of %d", reserved, cfg.SandboxMemoryBudget)
	}
}

// The reservations are the sandboxes the store lists for this server: after a restart
// the kept sandboxes still hold theirs, a sandbox lost in the restart gives its share
// back, and so does one destroyed as idle.
func TestMemoryBudgetAcrossRestarts(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.SandboxWorkspace = 4 << 20
		one := runner.WorkspaceMemory(cfg.SandboxWorkspace)
		cfg.SandboxMemoryBudget = 3 * one
		cfg.SandboxUserShare = 1 // the budget itself is under test: one user may take it all
		ctx := context.Background()
		start := func() *app.App {
			a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
			if errors.Is(err, runner.ErrUnavailable) {
				testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap python3")
			}
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		a := start()
		// a is the server of the moment: a test that fails early leaves no workspace mounted.
		t.Cleanup(func() {
			a.Sandboxes.DestroyAll(context.Background())
			a.Close()
		})
		admin, err := a.Store.UserByName(ctx, "admin")
		if err != nil {
			t.Fatal(err)
		}
		var made []string
		for _, idle := range []time.Duration{0, 0, time.Second} {
			sb, err := a.Sandboxes.Create(ctx, admin, sandbox.CreateRequest{IdleTimeout: idle})
			if err != nil {
				t.Fatal(err)
			}
			made = append(made, sb.ID)
		}
		if _, err := a.Sandboxes.Create(ctx, admin, sandbox.CreateRequest{}); !errors.Is(err, sandbox.ErrBudget) {
			t.Fatalf("a fourth sandbox: %v, want ErrBudget", err)
		}
		// The box of the first is lost while the server is down.
		if err := a.Runner.RemoveBox(ctx, made[0]); err != nil {
			t.Fatal(err)
		}
		a.Close()

		a = start()
		if reserved, _ := a.Sandboxes.Reserved(ctx); reserved != 2*one {
			t.Errorf("after the restart %d bytes are reserved, want the two kept workspaces' %d", reserved, 2*one)
		}
		if _, err := a.Sandboxes.Create(ctx, admin, sandbox.CreateRequest{}); err != nil {
			t.Fatalf("a create in the lost sandbox's share: %v", err)
		}
		if _, err := a.Sandboxes.Create(ctx, admin, sandbox.CreateRequest{}); !errors.Is(err, sandbox.ErrBudget) {
			t.Fatalf("a create past the budget after the restart: %v, want ErrBudget", err)
		}
		time.Sleep(1100 * time.Millisecond)
		if n, err := a.Sandboxes.Expire(ctx); n != 1 || err != nil {
			t.Fatalf("expired %d sandboxes (%v), want 1", n, err)
		}
		if _, err := a.Sandboxes.Create(ctx, admin, sandbox.CreateRequest{}); err != nil {
			t.Fatalf("a create in the idle sandbox's share: %v", err)
		}
	})
}

// A budget the machine cannot hold stops the server at start, with an error naming the
// setting, its value and the machine's memory. Once on each runner: Docker's workspaces
// are in the engine's machine.
func TestMemoryBudgetOverTheMachineIsRefused(t *testing.T) {
	for _, name := range []string{"bwrap", "docker"} {
		t.Run(name, func(t *testing.T) {
			cfg := apptest.Config(t, apptest.Backends[0])
			cfg.Runner = name
			ctx := context.Background()
			r, err := app.OpenRunner(ctx, cfg, slog.New(slog.DiscardHandler))
			if errors.Is(err, runner.ErrUnavailable) {
				testutil.Missing(t, name, err.Error(), "apt-get install bubblewrap python3; for docker: the engine and `skrip runner-image build`")
			}
			if err != nil {
				t.Fatal(err)
			}
			mem, err := r.Memory(ctx)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			cfg.SandboxMemoryBudget = mem.Bytes + 1<<30
			a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
			if err == nil {
				a.Close()
				t.Fatalf("a server with a budget of %s on a machine of %s started", runner.HumanBytes(cfg.SandboxMemoryBudget), mem)
			}
			for _, want := range []string{"SKRIP_SANDBOX_MEMORY_BUDGET", runner.HumanBytes(cfg.SandboxMemoryBudget), mem.String(), "at most"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error lacks %q: %v", want, err)
				}
			}
			// 80% of the machine is the most it takes.
			cfg.SandboxMemoryBudget = mem.Bytes / 100 * 80
			a, err = app.New(ctx, cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatalf("a budget of 80%% of the machine: %v", err)
			}
			a.Close()
		})
	}
}
