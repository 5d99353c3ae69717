package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/version"
)

func (e *env) doctorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show the settings in force, the database and the machine's tools skrip can use",
		Long: "Show what `skrip serve` would use with the same flags, env and --config: each setting and where it\n" +
			"came from, the database and its version, the blob store, and the programs of this machine skrip can use.\n\n" +
			settingsHelp(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := e.loadConfig(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 20*time.Second)
			defer cancel()
			e.doctor(ctx, loaded)
			return nil
		},
	}
	config.RegisterFlags(cmd.Flags())
	return cmd
}

func (e *env) doctor(ctx context.Context, loaded *config.Loaded) {
	cfg := loaded.Config
	w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "skrip %s (%s %s/%s)\n\n", version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)

	fmt.Fprintln(w, "Settings\tvalue\tfrom")
	for _, v := range loaded.Values {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", v.Env(), v.Display(), v.Source)
	}

	fmt.Fprintln(w, "\nDatabase\t\t")
	where := cfg.Path("skrip.db")
	kind := "SQLite"
	if store.IsPostgresURL(cfg.DatabaseURL) {
		kind, where = "PostgreSQL", "SKRIP_DATABASE_URL"
	}
	ver, applied, err := store.Inspect(ctx, cfg.DatabaseURL, cfg.Path("skrip.db"))
	if err != nil {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", kind, where, "not usable: "+err.Error())
	} else {
		fmt.Fprintf(w, "  %s\t%s\t%s, %d migrations applied\n", kind, where, ver, applied)
	}

	fmt.Fprintln(w, "\nBlob store\t\t")
	switch cfg.Blob {
	case "nats":
		where, state := natsState(ctx, cfg)
		fmt.Fprintf(w, "  nats\t%s\tbucket %s, %d replica(s)\n", where, cfg.NATSBucket, cfg.NATSReplicas)
		fmt.Fprintf(w, "  JetStream\t\t%s\n", state)
	default:
		fmt.Fprintf(w, "  fs\t%s\t%s\n", cfg.Path("blobs"), dirState(cfg.Path("blobs")))
	}

	e.doctorRunner(ctx, w, cfg)

	fmt.Fprintln(w, "\nMachine\t\t")
	for _, t := range machineTools(ctx) {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", t.name, t.where, t.state)
	}
	w.Flush()
}

// natsState describes the NATS server the settings name and its JetStream account. An
// embedded server's store is opened only when no skrip server answers at --addr, so that
// two servers never share one store.
func natsState(ctx context.Context, cfg config.Config) (where, state string) {
	var nc *nats.Conn
	if cfg.NATSURL != "" {
		where = natsserver.RedactURL(cfg.NATSURL)
		var err error
		if nc, err = natsserver.Dial(cfg.NATSURL, app.NATSAuth(cfg), nats.Name("skrip doctor"), nats.Timeout(3*time.Second)); err != nil {
			return where, "not reachable: " + err.Error()
		}
	} else {
		dir := cfg.Path("nats")
		where = "embedded nats-server under " + dir
		if _, err := os.Stat(dir); err != nil {
			return where, "not created yet; `skrip serve --blob nats` creates it"
		}
		probe := &http.Client{Timeout: time.Second}
		if resp, err := probe.Get("http://" + cfg.Addr + "/healthz"); err == nil {
			resp.Body.Close()
			return where, "in use by the skrip server at " + cfg.Addr + "; not opened twice (its /readyz checks the store)"
		}
		srv, err := natsserver.Start(dir, natsserver.WithReadyTimeout(10*time.Second))
		if err != nil {
			return where, "cannot start: " + err.Error()
		}
		defer srv.Shutdown()
		if nc, err = srv.Connect(nats.Name("skrip doctor")); err != nil {
			return where, "cannot connect: " + err.Error()
		}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return where, err.Error()
	}
	st, err := natsserver.JetStreamState(ctx, js)
	if err != nil {
		return where, "JetStream not usable: " + err.Error()
	}
	return where, fmt.Sprintf("server %s, %s", nc.ConnectedServerVersion(), st)
}

// doctorRunner says which sandbox runs would use and how each limit is enforced. It only
// inspects: a running server's runs and scratch directories are left alone.
func (e *env) doctorRunner(ctx context.Context, w io.Writer, cfg config.Config) {
	fmt.Fprintf(w, "\nRunner\tSKRIP_RUNNER=%s\t\n", cfg.Runner)
	quiet := slog.New(slog.DiscardHandler)
	if cfg.Runner != "bwrap" {
		image := cfg.RunnerImage
		if image == "" {
			image = docker.DefaultImage()
		}
		r, err := docker.Inspect(ctx, docker.Config{Image: image}, quiet)
		if err == nil {
			defer r.Close()
			fmt.Fprintf(w, "  docker\t%s\timage %s\n", r.Version(), image)
			printLimits(ctx, w, r, cfg)
			return
		}
		fmt.Fprintf(w, "  docker\tunavailable\t%s\n", err)
		if cfg.Runner == "docker" {
			fmt.Fprintf(w, "  \t\tskrip serve refuses to start without a sandbox\n")
			return
		}
	}
	r, err := bwrap.Inspect(bwrap.Config{WorkDir: cfg.Path("work", "bwrap"), Rootfs: cfg.BwrapRootfs, UID: cfg.BwrapUID, GID: cfg.BwrapGID}, quiet)
	if err != nil {
		fmt.Fprintf(w, "  bwrap\tunavailable\t%s\n", err)
		fmt.Fprintf(w, "  \t\tskrip serve refuses to start without a sandbox\n")
		return
	}
	root := "the host's /usr"
	if cfg.BwrapRootfs != "" {
		root = cfg.BwrapRootfs
	}
	fmt.Fprintf(w, "  bwrap\t%s\troot %s; memory, pids and CPU through %s\n", r.Version(), root, r.Limiter())
	printLimits(ctx, w, r, cfg)
}

// printLimits says how r enforces the limits of tool runs and of agent sandboxes.
func printLimits(ctx context.Context, w io.Writer, r runner.Runner, cfg config.Config) {
	printEnforcement(w, r.Enforcement(app.RunLimits(cfg)))
	sb := app.SandboxConfig(cfg)
	fmt.Fprintf(w, "\nAgent sandboxes\t%s runner\tdestroyed after %s unused, %d per user, one exec up to %s\n",
		r.Name(), sb.IdleTimeout, sb.MaxPerUser, sb.ExecTimeout)
	printEnforcement(w, r.BoxEnforcement(sb.Limits, sb.WorkspaceBytes))
	printBudget(ctx, w, r, cfg, sb.WorkspaceBytes)
}

// printBudget shows the memory budget of all workspaces together beside the machine's
// memory.
func printBudget(ctx context.Context, w io.Writer, r runner.Runner, cfg config.Config, workspace int64) {
	mem, err := r.Memory(ctx)
	if err != nil {
		fmt.Fprintf(w, "  memory budget\tNOT known\t%s: skrip serve refuses to start\n", err)
		return
	}
	fmt.Fprintf(w, "  machine memory\t\t%s\n", mem)
	budget, err := app.SandboxBudget(ctx, cfg, r)
	if err != nil {
		fmt.Fprintf(w, "  memory budget\tREFUSED\t%s; skrip serve refuses to start\n", err)
		return
	}
	fmt.Fprintf(w, "  memory budget\tenforced\t%s for the /workspace of all sandboxes together (%s): room for %d of %s; a create past it gets 507\n",
		runner.HumanBytes(budget), sandbox.BudgetSetting, budget/runner.WorkspaceMemory(workspace), runner.HumanBytes(workspace))
}

func printEnforcement(w io.Writer, list []runner.Enforced) {
	for _, en := range list {
		state := "enforced"
		if !en.OK {
			state = "NOT fully enforced"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\n", en.Limit, state, en.How)
	}
}

func dirState(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "not created yet"
	}
	if !st.IsDir() {
		return "not a directory"
	}
	return "exists"
}

type tool struct{ name, where, state string }

// machineTools reports the programs and kernel features skrip can use on this machine.
func machineTools(ctx context.Context) []tool {
	probe := func(name, install string, versionArgs ...string) tool {
		path, err := exec.LookPath(name)
		if err != nil {
			return tool{name, "not found", "install: " + install}
		}
		out, _ := exec.CommandContext(ctx, path, versionArgs...).CombinedOutput()
		v := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		if v == "" {
			v = "found"
		}
		return tool{name, path, v}
	}
	tools := []tool{
		probe("bwrap", "apt-get install bubblewrap", "--version"),
		probe("docker", "apt-get install docker.io", "version", "--format", "engine {{.Server.Version}}"),
		probe("python3", "apt-get install python3", "--version"),
		probe("weasyprint", "apt-get install weasyprint", "--version"),
	}
	return append(tools, cgroupState())
}

// cgroupState says which cgroup hierarchy the machine has.
func cgroupState() tool {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		b, _ := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
		return tool{"cgroups", "/sys/fs/cgroup", "v2: " + strings.TrimSpace(string(b))}
	}
	var v1 []string
	for _, c := range []string{"memory", "pids", "cpu"} {
		if _, err := os.Stat("/sys/fs/cgroup/" + c); err == nil {
			v1 = append(v1, c)
		}
	}
	if len(v1) > 0 {
		return tool{"cgroups", "/sys/fs/cgroup", "v1: " + strings.Join(v1, ", ")}
	}
	return tool{"cgroups", "not found", "limits fall back to rlimits"}
}
