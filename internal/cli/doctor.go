package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/dispatch"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/version"
)

func (e *env) doctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine for skrip serve (settings, database, blob store, runner), or a running server",
		Long: "Show what `skrip serve` would use with the same flags, env and --config: each setting and where it\n" +
			"came from, the database and its version, the blob store, and the programs of this machine skrip can use.\n" +
			"With --server URL it checks the skrip server there instead: its /readyz checks, version and run queue.\n" +
			"The exit status is 1 when a check failed (a warning does not count), 4 when the server does not answer.\n\n" +
			settingsHelp(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 20*time.Second)
			defer cancel()
			var rep *report
			if cmd.Flags().Changed("server") {
				var err error
				if rep, err = e.doctorServer(ctx); err != nil {
					return err
				}
			} else {
				loaded, err := e.loadConfig(cmd)
				if err != nil {
					return err
				}
				rep = e.doctor(ctx, loaded)
			}
			if asJSON {
				if err := e.printJSON(rep); err != nil {
					return err
				}
			} else {
				rep.print(e.stdout)
			}
			if len(rep.Failed) > 0 {
				return exitError{code: exitFailure, err: fmt.Errorf("doctor: %d check(s) failed: %s", len(rep.Failed), strings.Join(rep.Failed, "; "))}
			}
			return nil
		},
	}
	config.RegisterFlags(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON: {version, go, sections: [{name, checks: [{name, value, detail, state}]}], failed}")
	return cmd
}

// A report is what doctor found: sections of checks, each ok, info, a warning or
// failed. It prints as a table, or as JSON with --json.
type report struct {
	Version  string     `json:"version"`
	Go       string     `json:"go"`
	Server   string     `json:"server,omitempty"` // with --server: the server checked
	Sections []*section `json:"sections"`
	Failed   []string   `json:"failed"` // "section: check" of each failed check
}

type section struct {
	Name   string  `json:"name"`
	Value  string  `json:"value,omitempty"`
	Detail string  `json:"detail,omitempty"`
	Checks []check `json:"checks"`
}

type check struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Detail string `json:"detail"`
	State  string `json:"state"`
}

// The states of a check: only a failed one makes doctor exit non-zero.
const (
	stateOK      = "ok"
	stateInfo    = "info"
	stateWarning = "warning"
	stateFailed  = "failed"
)

func newReport() *report {
	return &report{Version: version.Version, Go: fmt.Sprintf("%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH), Failed: []string{}}
}

// section starts a section of the report.
func (r *report) section(name, value, detail string) *section {
	s := &section{Name: name, Value: value, Detail: detail, Checks: []check{}}
	r.Sections = append(r.Sections, s)
	return s
}

// add adds a check to the last section, and names it among the failed ones when it
// failed.
func (r *report) add(state, name, value, detail string) {
	s := r.Sections[len(r.Sections)-1]
	s.Checks = append(s.Checks, check{Name: name, Value: value, Detail: detail, State: state})
	if state == stateFailed {
		r.Failed = append(r.Failed, strings.TrimSpace(s.Name+": "+name+" "+value))
	}
}

func (r *report) print(out io.Writer) {
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "skrip %s (%s)\n", r.Version, r.Go)
	if r.Server != "" {
		fmt.Fprintf(w, "checked: the server at %s\n", r.Server)
	}
	for _, s := range r.Sections {
		if s.Value == "" && s.Detail == "" {
			// No tab: a long heading would widen the columns below it.
			fmt.Fprintf(w, "\n%s\n", s.Name)
		} else {
			fmt.Fprintf(w, "\n%s\t%s\t%s\n", s.Name, s.Value, s.Detail)
		}
		for _, c := range s.Checks {
			fmt.Fprintf(w, "  %s\t%s\t%s\n", c.Name, c.Value, c.Detail)
		}
	}
	if len(r.Failed) > 0 {
		fmt.Fprintf(w, "\nFAILED: %s\n", strings.Join(r.Failed, "; "))
	}
	w.Flush()
}

func (e *env) doctor(ctx context.Context, loaded *config.Loaded) *report {
	cfg := loaded.Config
	rep := newReport()
	rep.section("Settings", "value", "from")
	for _, v := range loaded.Values {
		rep.add(stateInfo, v.Env(), v.Display(), string(v.Source))
	}

	rep.section("Database", "", "")
	where := cfg.Path("skrip.db")
	kind := "SQLite"
	if store.IsPostgresURL(cfg.DatabaseURL) {
		kind, where = "PostgreSQL", "SKRIP_DATABASE_URL"
	}
	ver, applied, err := store.Inspect(ctx, cfg.DatabaseURL, cfg.Path("skrip.db"))
	switch {
	case err != nil && cfg.DatabaseURL == "" && !exists(cfg.Path("skrip.db")):
		rep.add(stateInfo, kind, where, err.Error())
	case err != nil && cfg.NATSURL != "" && cfg.DatabaseURL == "" && cfg.Blob != "nats":
		// A worker's settings: it holds no database.
		rep.add(stateInfo, kind, where, "not usable: "+err.Error())
	case err != nil:
		rep.add(stateFailed, kind, where, "not usable: "+err.Error())
	default:
		rep.add(stateOK, kind, where, fmt.Sprintf("%s, %d migrations applied", ver, applied))
	}

	rep.section("Blob store", "", "")
	switch cfg.Blob {
	case "nats":
		where, state, ok, cluster := natsState(ctx, cfg)
		rep.add(stateInfo, "nats", where, fmt.Sprintf("bucket %s, %d replica(s)", cfg.NATSBucket, cfg.NATSReplicas))
		rep.add(okOrFailed(ok), "JetStream", "", state)
		if cluster != nil {
			printCluster(rep, cfg, *cluster)
		}
	default:
		rep.add(stateInfo, "fs", cfg.Path("blobs"), dirState(cfg.Path("blobs")))
		if cfg.NATSURL != "" {
			// A worker's settings: no blob store of its own, the cluster's NATS.
			where, state, ok, cluster := natsState(ctx, cfg)
			rep.add(okOrFailed(ok), "nats", where, state)
			if cluster != nil {
				printCluster(rep, cfg, *cluster)
			}
		}
	}

	e.doctorRunner(ctx, rep, cfg)

	rep.section("Machine", "", "")
	for _, t := range machineTools(ctx) {
		rep.add(stateInfo, t.name, t.where, t.state)
	}
	return rep
}

func okOrFailed(ok bool) string {
	if ok {
		return stateOK
	}
	return stateFailed
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// natsState describes the NATS server the settings name and its JetStream account. An
// embedded server's store is opened only when no skrip server answers at --addr, so that
// two servers never share one store.
func natsState(ctx context.Context, cfg config.Config) (where, state string, ok bool, cluster *dispatch.Overview) {
	var nc *nats.Conn
	if cfg.NATSURL != "" {
		where = natsserver.RedactURL(cfg.NATSURL)
		var err error
		if nc, err = natsserver.Dial(cfg.NATSURL, app.NATSAuth(cfg), nats.Name("skrip doctor"), nats.Timeout(3*time.Second)); err != nil {
			return where, "not reachable: " + err.Error(), false, nil
		}
	} else {
		dir := cfg.Path("nats")
		where = "embedded nats-server under " + dir
		if _, err := os.Stat(dir); err != nil {
			return where, "not created yet; `skrip serve --blob nats` creates it", true, nil
		}
		probe := &http.Client{Timeout: time.Second}
		if resp, err := probe.Get("http://" + cfg.Addr + "/healthz"); err == nil {
			resp.Body.Close()
			return where, "in use by the skrip server at " + cfg.Addr + "; not opened twice (its /readyz checks the store)", true, nil
		}
		srv, err := natsserver.Start(dir, natsserver.WithReadyTimeout(10*time.Second))
		if err != nil {
			return where, "cannot start: " + err.Error(), false, nil
		}
		defer srv.Shutdown()
		if nc, err = srv.Connect(nats.Name("skrip doctor")); err != nil {
			return where, "cannot connect: " + err.Error(), false, nil
		}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return where, err.Error(), false, nil
	}
	st, err := natsserver.JetStreamState(ctx, js)
	if err != nil {
		return where, "JetStream not usable: " + err.Error(), false, nil
	}
	if cfg.NATSURL != "" {
		names, err := protocol.NewNames(cfg.NATSPrefix)
		if err != nil {
			return where, "SKRIP_NATS_PREFIX: " + err.Error(), false, nil
		}
		o := dispatch.Describe(ctx, js, names, cfg.NATSBucket, cfg.NATSWorkBucket)
		cluster = &o
	}
	return where, fmt.Sprintf("server %s, %s", nc.ConnectedServerVersion(), st), true, cluster
}

// printCluster shows a cluster's queue, buckets and workers (docs/cluster.md).
func printCluster(rep *report, cfg config.Config, o dispatch.Overview) {
	mode := "off: SKRIP_BLOB=nats and a PostgreSQL SKRIP_DATABASE_URL turn it on for `skrip serve`"
	if cfg.Cluster() {
		mode = "on"
	}
	rep.section("Cluster", "", mode)
	names, _ := protocol.NewNames(cfg.NATSPrefix) // checked when the cluster was read
	rep.add(stateInfo, "run queue", names.Stream(), fmt.Sprintf("%s, %d redelivered", o.Queue, o.Redelivered))
	for _, b := range o.Buckets {
		rep.add(stateInfo, "bucket", "", b)
	}
	if len(o.Workers) == 0 {
		rep.add(stateWarning, "workers", "", fmt.Sprintf("none seen (a worker's heartbeat lasts %s)", 3*protocol.HeartbeatEvery(cfg.RunAckWait)))
	}
	now := time.Now()
	for _, hb := range o.Workers {
		rep.add(stateOK, "worker "+hb.Worker, hb.Host, fmt.Sprintf("%s, %d/%d busy, %d sandbox(es) (budget %s), seen %s, version %s", hb.Runner,
			hb.Busy, hb.Concurrency, len(hb.Sandboxes), runner.HumanBytes(hb.BoxBudget), hb.Seen(now), hb.Version))
	}
}

// doctorRunner says which sandbox runs would use, the runtime tools get in it, and how
// each limit is enforced. It only inspects: a running server's runs and scratch
// directories are left alone.
func (e *env) doctorRunner(ctx context.Context, rep *report, cfg config.Config) {
	rep.section("Runner", "SKRIP_RUNNER="+cfg.Runner, "")
	quiet := slog.New(slog.DiscardHandler)
	if cfg.Runner != "bwrap" {
		image := cfg.RunnerImage
		if image == "" {
			image = docker.DefaultImage()
		}
		r, err := docker.Inspect(ctx, docker.Config{Image: image}, quiet)
		if err == nil {
			defer r.Close()
			rep.add(stateOK, "docker", r.Version(), "image "+image)
			rt, rtErr := r.Runtime(ctx)
			switch recipe, err := r.Recipe(ctx); {
			case err != nil:
				rep.add(stateWarning, "runtime", "NOT known", err.Error())
			case recipe == rootfs.Recipe():
				rep.add(stateOK, "runtime", "current", "imported from a rootfs of this skrip's recipe ("+recipe[:12]+")")
			case recipe == "":
				rep.add(stateWarning, "runtime", "no recipe", "the image records none (made from deploy/runner/Dockerfile, or by an older skrip): see its packages below")
			default:
				rep.add(stateWarning, "runtime", "WARNING", fmt.Sprintf("the image was imported from a rootfs of another recipe (%.12s, this skrip's is %.12s); %s", recipe, rootfs.Recipe(), runtimeHowTo))
			}
			warnMissing(rep, rt)
			printLimits(ctx, rep, r, cfg)
			printWarm(rep, nil, cfg)
			printRuntime(rep, "image "+image+", read from its own /"+rootfs.StatusFile, rt, rtErr)
			return
		}
		if cfg.Runner == "docker" {
			rep.add(stateFailed, "docker", "unavailable", err.Error()+"; skrip serve refuses to start without a sandbox")
			return
		}
		rep.add(stateInfo, "docker", "unavailable", err.Error())
	}
	bc := app.BwrapConfig(cfg)
	r, err := bwrap.Inspect(bc, quiet)
	if err != nil {
		rep.add(stateFailed, "bwrap", "unavailable", err.Error()+"; skrip serve refuses to start without a sandbox")
		return
	}
	root, source := bc.Rootfs, bc.Rootfs+", read from its /"+rootfs.StatusFile
	if root == "" {
		source = "the host's /usr, read from /" + rootfs.StatusFile
		rep.add(stateOK, "bwrap", r.Version(), "root the host's /usr; memory, pids and CPU through "+r.Limiter())
		rep.add(stateWarning, "runtime", "WARNING", "the host's /usr is a fallback: tools get this machine's Python and packages, not skrip's runtime; "+runtimeHowTo)
	} else {
		rep.add(stateOK, "bwrap", r.Version(), "root "+root+"; memory, pids and CPU through "+r.Limiter())
		switch st, err := rootfs.Inspect(root); {
		case err != nil:
			rep.add(stateWarning, "runtime", "NOT known", err.Error())
		case st.Current():
			rep.add(stateOK, "runtime", "current", st.Describe())
		default:
			rep.add(stateWarning, "runtime", "WARNING", root+" is "+st.Describe()+", not of this skrip's recipe; "+runtimeHowTo)
		}
	}
	rt, rtErr := rootfs.ReadRuntime(cmp.Or(root, "/"))
	warnMissing(rep, rt)
	printLimits(ctx, rep, r, cfg)
	printWarm(rep, r, cfg)
	printRuntime(rep, source, rt, rtErr)
}

// printWarm shows the warm starts' budget, and, on bwrap (r), what interpreters a server
// on this work directory has parked now. The Docker runner's parked containers show in
// `docker ps --filter label=skrip.pool` and in the server's /metrics.
func printWarm(rep *report, r *bwrap.Runner, cfg config.Config) {
	if cfg.RunnerWarmMemory <= 0 {
		rep.section("Warm starts", "off", "SKRIP_RUNNER_WARM_MEMORY is 0: every run starts Python itself")
		return
	}
	rep.section("Warm starts", "on", "interpreters parked ahead of runs may hold "+runner.HumanBytes(cfg.RunnerWarmMemory)+" (SKRIP_RUNNER_WARM_MEMORY)")
	if r == nil {
		return
	}
	if n, bytes, ok := r.WarmOnMachine(); ok {
		rep.add(stateInfo, "parked now", fmt.Sprint(n), "hold "+runner.HumanBytes(bytes)+" (parked by a server on this data dir, or running their run)")
	} else {
		rep.add(stateInfo, "parked now", "NOT known", "no cgroups here to read their memory from")
	}
}

// runtimeHowTo says how to get skrip's runtime.
const runtimeHowTo = "get it with `bash scripts/deps.sh` (in the repository) or `sudo skrip runner-image build`, which build " +
	rootfs.DefaultDir + " (bwrap uses it while SKRIP_BWRAP_ROOTFS is empty) and import it as the Docker runner's image"

// warnMissing warns when parts of the runtime are not installed.
func warnMissing(rep *report, rt []rootfs.Component) {
	var missing []string
	for _, c := range rt {
		if c.Version == "" {
			missing = append(missing, c.Name)
		}
	}
	if len(missing) > 0 {
		rep.add(stateWarning, "runtime", "WARNING", "missing, so the tools that use them fail: "+strings.Join(missing, ", ")+"; "+runtimeHowTo)
	}
}

// printRuntime lists the runtime tools get: Python and the packages they use, with the
// Debian package versions.
func printRuntime(rep *report, source string, rt []rootfs.Component, err error) {
	rep.section("Runtime ("+source+")", "", "")
	if err != nil {
		rep.add(stateWarning, "", "NOT known", err.Error())
		return
	}
	for _, c := range rt {
		v, state := c.Version, stateOK
		if v == "" {
			v, state = "MISSING", stateWarning
		}
		rep.add(state, c.Name, v, "Debian package "+c.Package)
		if c.Name == "pandoc" && c.Version != "" {
			// The original hub's tools are written for pandoc 3.8 (docs/runner-contract.md).
			rep.add(stateInfo, "pandoc's version", upstreamVersion(c.Version),
				"tools' pandoc 3.8 options (--syntax-highlighting) reach it through skrip's wrapper, the shim's bin/pandoc")
		}
	}
}

// upstreamVersion is a Debian version without its epoch and its Debian part:
// "1:3.1.11.1+ds-2" is pandoc's "3.1.11.1".
func upstreamVersion(v string) string {
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	if i := strings.IndexAny(v, "+~"); i > 0 {
		v = v[:i]
	}
	return v
}

// printLimits says how r enforces the limits of tool runs and of agent sandboxes.
func printLimits(ctx context.Context, rep *report, r runner.Engine, cfg config.Config) {
	printEnforcement(rep, r.Enforcement(app.RunLimits(cfg)))
	sb := app.SandboxConfig(cfg)
	rep.section("Agent sandboxes", r.Name()+" runner", fmt.Sprintf("destroyed after %s unused, %d per user, one exec up to %s",
		sb.IdleTimeout, sb.MaxPerUser, sb.ExecTimeout))
	printEnforcement(rep, r.BoxEnforcement(sb.Limits, sb.WorkspaceBytes))
	printBudget(ctx, rep, r, cfg, sb.WorkspaceBytes)
}

// printBudget shows the memory budget of all workspaces together beside the machine's
// memory.
func printBudget(ctx context.Context, rep *report, r runner.Sandboxes, cfg config.Config, workspace int64) {
	mem, err := r.Memory(ctx)
	if err != nil {
		rep.add(stateFailed, "memory budget", "NOT known", err.Error()+": skrip serve refuses to start")
		return
	}
	rep.add(stateInfo, "machine memory", "", mem.String())
	budget, err := app.SandboxBudget(ctx, cfg, r)
	if err != nil {
		rep.add(stateFailed, "memory budget", "REFUSED", err.Error()+"; skrip serve refuses to start")
		return
	}
	rep.add(stateOK, "memory budget", "enforced", fmt.Sprintf("%s for the /workspace of all sandboxes together (%s): room for %d of %s; a create past it gets 507",
		runner.HumanBytes(budget), sandbox.BudgetSetting, budget/runner.WorkspaceMemory(workspace), runner.HumanBytes(workspace)))
}

func printEnforcement(rep *report, list []runner.Enforced) {
	for _, en := range list {
		value, state := "enforced", stateOK
		if !en.OK {
			value, state = "NOT fully enforced", stateWarning
		}
		rep.add(state, en.Limit, value, en.How)
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

// doctorServer checks the skrip server that --server names: that it is alive and of
// which version, each of its /readyz checks, its run queue (from /metrics), and the
// token, when there is one. A server that does not answer is an error (exit 4).
func (e *env) doctorServer(ctx context.Context) (*report, error) {
	t, err := e.resolve()
	if err != nil {
		return nil, err
	}
	c, err := client.New(t.server, t.token)
	if err != nil {
		return nil, err
	}
	rep := newReport()
	rep.Server = t.server
	rep.section("Server", "", "")
	var health struct {
		Status  string `json:"status"`
		Version string `json:"version"`
	}
	if err := c.Do(ctx, http.MethodGet, "/healthz", nil, &health); err != nil {
		return nil, err
	}
	rep.add(stateOK, "alive", "version "+health.Version, "GET /healthz")
	if health.Version != version.Version {
		rep.add(stateWarning, "version", health.Version, "this skrip is "+version.Version+"; a client and a server of different versions may not agree on everything")
	}

	rep.section("Ready", "", "GET /readyz")
	checks, err := readiness(ctx, c)
	if err != nil {
		rep.add(stateFailed, "readyz", "no answer", err.Error())
	}
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if checks[name] == "ok" {
			rep.add(stateOK, name, "ok", "")
		} else {
			rep.add(stateFailed, name, "not ready", checks[name])
		}
	}

	rep.section("Runs", "", "GET /metrics")
	if depth, err := queueDepth(ctx, c); err != nil {
		rep.add(stateWarning, "queue", "NOT known", err.Error())
	} else {
		rep.add(stateInfo, "queue", fmt.Sprint(depth), "runs admitted on this node and waiting for a worker (skrip_run_queue_depth)")
	}

	rep.section("Token", "", "")
	if t.token == "" {
		rep.add(stateInfo, "token", "none", "no token given, so none checked (skrip login, --token-file or SKRIP_TOKEN)")
		return rep, nil
	}
	var me struct {
		Name string `json:"name"`
		Role string `json:"role"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/me", nil, &me); err != nil {
		rep.add(stateFailed, "token", "refused", err.Error())
	} else {
		rep.add(stateOK, "token", me.Name, "signed in as "+me.Name+" ("+me.Role+")")
	}
	return rep, nil
}

// readiness reads /readyz's checks, whether the server is ready (200) or not (503).
func readiness(ctx context.Context, c *client.Client) (map[string]string, error) {
	var ready struct {
		Checks map[string]string `json:"checks"`
	}
	err := c.Do(ctx, http.MethodGet, "/readyz", nil, &ready)
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusServiceUnavailable {
		checks := map[string]string{}
		if m, ok := apiErr.Details["checks"].(map[string]any); ok {
			for k, v := range m {
				checks[k] = fmt.Sprint(v)
			}
		}
		return checks, nil
	}
	return ready.Checks, err
}

// queueDepth reads skrip_run_queue_depth from the server's /metrics.
func queueDepth(ctx context.Context, c *client.Client) (float64, error) {
	resp, err := c.Request(ctx, http.MethodGet, "/metrics", nil, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "skrip_run_queue_depth "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("the server's /metrics has no skrip_run_queue_depth")
}
