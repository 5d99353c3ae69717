// Package docker runs tool runs in containers through the Docker Engine API: one
// container per run with no network, a read-only root, no capabilities, a non-root user
// and memory, pids and CPU limits; files are copied in before start and the artifacts out
// as a checked tar stream; the container is always removed.
package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/shim"
)

// Config chooses the image and names this server's containers.
type Config struct {
	Image string
	// PoolSize containers with PoolLimits are kept created and started ahead of runs
	// (0: none); a run with other limits gets a container made for it.
	PoolSize   int
	PoolLimits runner.Limits
	// Server names this server's containers (a hash of it is a label), so that sweeping
	// orphans at start never touches another server's runs on the same engine.
	Server string
}

// Runner is the Docker runner.
type Runner struct {
	cli     *client.Client
	image   string
	server  string
	version string
	log     *slog.Logger
	pending sync.WaitGroup // containers being removed
	pool    *pool
	// securityOpt is every container's HostConfig.SecurityOpt (seccomp.go).
	securityOpt []string
	ready       runner.Readiness
}

// Labels every container of a run carries.
const (
	LabelRunID  = "skrip.run_id"
	LabelToolID = "skrip.tool_id"
	LabelServer = "skrip.server"
	LabelPool   = "skrip.pool" // a warm container, not yet given a run
)

// ServerLabel is the value of the skrip.server label of a server's containers.
func ServerLabel(server string) string {
	sum := sha256.Sum256([]byte(server))
	return hex.EncodeToString(sum[:8])
}

// maxResultBytes caps how much of result.json is read.
const maxResultBytes = 8 << 20

// New connects like Inspect, then removes the containers a crash of this server left.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Runner, error) {
	r, err := Inspect(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	r.removeOrphans(ctx)
	r.pool = r.startPool(cfg.PoolSize, cfg.PoolLimits)
	return r, nil
}

// Inspect connects to the engine named by the environment (DOCKER_HOST, or the local
// socket) and checks that the image exists, touching no container: `skrip doctor` uses
// it beside a running server. An ErrUnavailable error says what to start or build.
func Inspect(ctx context.Context, cfg Config, log *slog.Logger) (*Runner, error) {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", runner.ErrUnavailable, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: the Docker engine does not answer (%v); start it, or set DOCKER_HOST", runner.ErrUnavailable, err)
	}
	ok, err := ImageExists(pctx, cli, cfg.Image)
	if err != nil {
		cli.Close()
		return nil, err
	}
	if !ok {
		cli.Close()
		return nil, fmt.Errorf("%w: the Docker engine answers, but the runner image %s is missing; build it with `skrip runner-image build` (no registry needed)",
			runner.ErrUnavailable, cfg.Image)
	}
	r := &Runner{cli: cli, image: cfg.Image, server: ServerLabel(cfg.Server), log: log}
	if r.securityOpt, err = securityOpt(); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: building the seccomp profile: %v", runner.ErrUnavailable, err)
	}
	r.ready.Check = r.check
	if v, err := cli.ServerVersion(pctx, client.ServerVersionOptions{}); err == nil {
		r.version = "Docker Engine " + v.Version + " (API " + cli.ClientVersion() + ")"
	}
	return r, nil
}

// Ping implements runner.Runner.
func (r *Runner) Ping(ctx context.Context) error { return r.ready.Ping(ctx) }

// check asks the engine what Inspect asks at start: that it answers and that the runner
// image is there.
func (r *Runner) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := r.cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("%w: the Docker engine does not answer (%v)", runner.ErrUnavailable, err)
	}
	ok, err := ImageExists(ctx, r.cli, r.image)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: the runner image %s is missing; build it with `skrip runner-image build`", runner.ErrUnavailable, r.image)
	}
	return nil
}

// Name implements runner.Runner.
func (r *Runner) Name() string { return "docker" }

// Version describes the engine.
func (r *Runner) Version() string { return r.version }

// Image is the runner image in use.
func (r *Runner) Image() string { return r.image }

// Close implements runner.Runner; it waits for container removals under way.
func (r *Runner) Close() error {
	r.pool.close()
	r.pending.Wait()
	return r.cli.Close()
}

// Enforcement implements runner.Runner.
func (r *Runner) Enforcement(l runner.Limits) []runner.Enforced {
	return []runner.Enforced{
		{Limit: "wall time", How: fmt.Sprintf("%s: timeout(1) kills the tool, the server removes the container %s later at the latest", l.WallTime, killGrace), OK: true},
		{Limit: "memory", How: "HostConfig.Memory = MemorySwap = " + runner.HumanBytes(l.MemoryBytes), OK: true},
		{Limit: "pids", How: fmt.Sprintf("HostConfig.PidsLimit = %d", l.Pids), OK: true},
		{Limit: "cpu", How: fmt.Sprintf("HostConfig.NanoCPUs (%g CPU)", l.CPUs), OK: true},
		{Limit: "/tmp", How: runner.HumanBytes(l.TmpBytes) + " tmpfs", OK: true},
		{Limit: "/work/output", How: runner.HumanBytes(l.OutputBytes) + " tmpfs, copied out as a checked tar stream", OK: true},
		{Limit: "stdout/stderr", How: fmt.Sprintf("first %d bytes of each kept, the rest counted and dropped", l.LogBytes), OK: true},
		{Limit: "network", How: "NetworkMode none", OK: true},
		hostUID, syscalls,
	}
}

// What every container runs as, and under.
var (
	hostUID  = runner.Enforced{Limit: "host uid", How: "65534:65534, the image's user (no user namespace remapping: the host sees the same uid)", OK: true}
	syscalls = runner.Enforced{Limit: "system calls", How: "Docker's default seccomp profile, with ptrace and the bwrap runner's other refusals taken out of its allow rules", OK: true}
)

// killGrace is how long after the wall time the server waits for the container's own
// timeout before it removes the container.
const killGrace = 10 * time.Second

// supervisor is the container's first process. It waits for its run's start line on
// stdin (a marker token and the wall time in seconds), so that a container can be created
// and started ahead of its run (the warm pool); takes the run's environment from the file
// copied in with the inputs; runs the shim under timeout(1); reports the exit code and
// the cgroup's OOM kill count after the marker on stderr (the engine's State.OOMKilled
// only notices a kill of the first process, which is this one); and waits, so that
// /work/output (a tmpfs) is still there to copy out.
const supervisor = `read -r token wall fsize || exit 0
set -a
. /work/.skrip/env
set +a
mkdir -p /tmp/home
ulimit -f "$fsize"
timeout -s KILL "$wall" python3 -s -B /work/.skrip/skrip_shim.py
code=$?
# Nothing the tool started may outlive it: collection must not race a process of the run.
kill -KILL -1 2>/dev/null
oom=$(cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null | awk '$1 == "oom_kill" { print $2; exit }')
printf '\n%s %s %s\n' "$token" "$code" "${oom:-0}" >&2
exec sleep 2147483647`

// container is a created, attached and started container whose supervisor waits for its
// run.
type box struct {
	id     string
	att    client.ContainerAttachResult
	waiter client.ContainerWaitResult
}

// prepare creates, attaches and starts a container with limits l; runID and toolID label
// it when known (a pooled container gets them only in the log).
func (r *Runner) prepare(ctx context.Context, l runner.Limits, runID, toolID string) (*box, error) {
	labels := map[string]string{LabelServer: r.server}
	name := ""
	if runID != "" {
		labels[LabelRunID], labels[LabelToolID], name = runID, toolID, "skrip-"+runID
	} else {
		labels[LabelPool] = "1"
	}
	pids := int64(l.Pids)
	// Creation is never cancelled halfway: the engine would finish it anyway, and a
	// container whose id we never learnt could not be removed.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	created, err := r.cli.ContainerCreate(cctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image: r.image, Cmd: []string{"/bin/sh", "-c", supervisor}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			User: "65534:65534", WorkingDir: "/work", Labels: labels, NetworkDisabled: true,
			OpenStdin: true, StdinOnce: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		},
		HostConfig: &container.HostConfig{
			NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, SecurityOpt: r.securityOpt,
			// The run's output reaches the server through the attach stream, capped there;
			// the engine's own log of it (json-file by default) would keep all of it on disk.
			LogConfig: container.LogConfig{Type: "none"},
			Resources: container.Resources{Memory: l.MemoryBytes, MemorySwap: l.MemoryBytes, PidsLimit: &pids, NanoCPUs: int64(l.CPUs * 1e9)},
			Tmpfs: map[string]string{
				"/tmp":         fmt.Sprintf("size=%d,mode=1777", max(l.TmpBytes, 4096)),
				"/work/output": fmt.Sprintf("size=%d,nr_inodes=%d,mode=1777", max(l.OutputBytes, 4096), runner.OutputInodes),
			},
			// /work is an anonymous volume: files can be copied into it although the
			// root is read-only; it goes with the container.
			Mounts: []mount.Mount{{Type: mount.TypeVolume, Target: "/work"}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the container: %w", err)
	}
	c := &box{id: created.ID}
	fail := func(err error) (*box, error) {
		r.remove(c.id)
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if c.att, err = r.cli.ContainerAttach(ctx, c.id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true}); err != nil {
		return fail(fmt.Errorf("attaching: %w", err))
	}
	c.waiter = r.cli.ContainerWait(context.WithoutCancel(ctx), c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := r.cli.ContainerStart(ctx, c.id, client.ContainerStartOptions{}); err != nil {
		c.att.Close()
		return fail(fmt.Errorf("starting the container: %w", err))
	}
	return c, nil
}

// remove removes a container and its volume in the background; Close waits for it.
func (r *Runner) remove(id string) {
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := r.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			r.log.Warn("removing a run's container", "container", id, "error", err)
		}
	}()
}

// envFile is the run's environment as shell assignments the supervisor sources.
func envFile(spec runner.Spec) []byte {
	env := runner.Env("/tmp/home", spec.Env)
	var b bytes.Buffer
	for _, k := range runner.SortedKeys(env) {
		fmt.Fprintf(&b, "%s='%s'\n", k, strings.ReplaceAll(env[k], "'", `'\''`))
	}
	return b.Bytes()
}

// Run implements runner.Runner. It takes a container from the warm pool when one with
// the run's limits is there, and makes one otherwise.
func (r *Runner) Run(ctx context.Context, spec runner.Spec) (runner.Result, error) {
	l := spec.Limits
	token := randomToken()
	wall := int64(l.WallTime / time.Second)
	if wall < 1 {
		wall = 1
	}
	c := r.pool.take(l)
	if c != nil {
		r.log.Debug("run in a warm container", "run", spec.ID, "container", c.id)
	} else {
		var err error
		if c, err = r.prepare(ctx, l, spec.ID, spec.ToolID); err != nil {
			return runner.Result{}, err
		}
	}
	// The container serves this run only, and is always removed with its volume.
	defer r.remove(c.id)
	defer c.att.Close()

	in, err := inputTar(spec, envFile(spec))
	if err != nil {
		return runner.Result{}, err
	}
	if _, err := r.cli.CopyToContainer(ctx, c.id, client.CopyToContainerOptions{DestinationPath: "/work", Content: in}); err != nil {
		return runner.Result{}, fmt.Errorf("copying the inputs in: %w", err)
	}
	out := readOutput(c.att.Reader, token, l.LogBytes, spec.OnLine)
	fsize := (max(l.OutputBytes, maxResultBytes) + 511) / 512 // ulimit -f blocks: result.json is on the volume
	if _, err := fmt.Fprintf(c.att.Conn, "%s %d %d\n", token, wall, fsize); err != nil {
		return runner.Result{}, fmt.Errorf("starting the run: %w", err)
	}
	id, waiter := c.id, c.waiter
	start := time.Now()
	res := runner.Result{ExecResult: runner.ExecResult{ExitCode: -1}}
	deadline := time.NewTimer(l.WallTime + killGrace)
	defer deadline.Stop()
	finished := false
	select {
	case end := <-out.done:
		res.ExitCode, finished = end.code, true
		res.OOMKilled = end.oomKills > 0
		res.TimedOut = end.code == 137 && !res.OOMKilled && time.Since(start) >= l.WallTime-100*time.Millisecond
	case w := <-waiter.Result:
		res.ExitCode = int(w.StatusCode) // the supervisor itself died
	case <-waiter.Error:
	case <-deadline.C:
		res.TimedOut = true
	case <-ctx.Done():
	}
	res.Duration = time.Since(start)
	if insp, err := r.cli.ContainerInspect(context.WithoutCancel(ctx), id, client.ContainerInspectOptions{}); err == nil && insp.Container.State != nil {
		res.OOMKilled = res.OOMKilled || insp.Container.State.OOMKilled
	}
	if finished {
		if res.ResultJSON, res.LeftOut, err = r.collect(ctx, id, l.OutputBytes, spec.Collect); err != nil {
			return res, err
		}
	}
	c.att.Close()
	select {
	case <-out.streamed:
	case <-time.After(2 * time.Second):
	}
	out.into(&res.ExecResult)
	return res, nil
}

// removeOrphans removes this server's containers that a crash left behind.
func (r *Runner) removeOrphans(ctx context.Context) {
	list, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelServer+"="+r.server)})
	if err != nil {
		r.log.Warn("listing orphan containers", "error", err)
		return
	}
	for _, c := range list.Items {
		if _, err := r.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err == nil {
			r.log.Info("removed a container a crash left behind", "container", c.ID, "run", c.Labels[LabelRunID])
		}
	}
}

// inputTar packs what the run sees under /work: script.py, memory.json, input/ and the
// shim under .skrip/ (all root's, read-only to the tool, which runs as 65534) and
// result.json.
func inputTar(spec runner.Spec, env []byte) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	add := func(name string, mode int64, uid int, body []byte) error {
		h := &tar.Header{Name: name, Mode: mode, Uid: uid, Gid: uid, ModTime: now, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := add("script.py", 0o444, 0, spec.Script); err != nil {
		return nil, err
	}
	if err := add("memory.json", 0o444, 0, runner.MemoryJSON(spec.Memory)); err != nil {
		return nil, err
	}
	// Copied-in files belong to root: result.json is the one the tool may write.
	if err := add("result.json", 0o666, 0, nil); err != nil {
		return nil, err
	}
	if err := add(".skrip/", 0o755, 0, nil); err != nil {
		return nil, err
	}
	if err := add(".skrip/env", 0o444, 0, env); err != nil {
		return nil, err
	}
	shimFiles, _ := fs.ReadDir(shim.FS, ".")
	for _, f := range shimFiles {
		b, err := fs.ReadFile(shim.FS, f.Name())
		if err != nil {
			return nil, err
		}
		if err := add(".skrip/"+f.Name(), 0o444, 0, b); err != nil {
			return nil, err
		}
	}
	if err := add("input/", 0o755, 0, nil); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(spec.InputDir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(spec.InputDir, e.Name()))
		if err != nil {
			return nil, err
		}
		st, _ := f.Stat()
		h := &tar.Header{Name: "input/" + e.Name(), Mode: 0o444, ModTime: now, Size: st.Size(), Typeflag: tar.TypeReg}
		err = tw.WriteHeader(h)
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return &buf, tw.Close()
}

// collect streams result.json and /work/output out in one tar, made by tar(1) inside the
// container (the engine's copy API cannot see a tmpfs mounted in the container), into a
// temporary directory, hands the output to fn (when set) and returns result.json. Every
// member is checked: only regular files, directories and symlinks (kept as links, never
// followed), no absolute names or "..". Regular files go through an OutputBudget of
// limit, in path order (tar sorts them), and the ones left out are returned. tar keeps
// holes as holes (-S), so a sparse file costs the stream only what it holds.
func (r *Runner) collect(ctx context.Context, id string, limit int64, fn func(dir string) error) ([]byte, runner.LeftOut, error) {
	ex, err := r.cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"tar", "-C", "/work", "--sort=name", "-S", "-cf", "-", "result.json", "output"},
		AttachStdout: true, AttachStderr: true})
	if err != nil {
		return nil, runner.LeftOut{}, fmt.Errorf("copying /work/output out: %w", err)
	}
	att, err := r.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, runner.LeftOut{}, fmt.Errorf("copying /work/output out: %w", err)
	}
	defer att.Close()
	pr, pw := io.Pipe()
	var tarErr bytes.Buffer
	go func() {
		_, err := stdcopy.StdCopy(pw, &limitedWriter{w: &tarErr, n: 64 << 10}, att.Reader)
		pw.CloseWithError(err)
	}()
	dir, err := os.MkdirTemp("", "skrip-output-")
	if err != nil {
		return nil, runner.LeftOut{}, err
	}
	defer os.RemoveAll(dir)
	budget := runner.OutputBudget{Limit: limit}
	result, err := extract(tar.NewReader(pr), dir, &budget)
	if err != nil {
		pr.CloseWithError(err)
		return nil, runner.LeftOut{}, err
	}
	io.Copy(io.Discard, pr)
	if tarErr.Len() > 0 {
		// tar reports files it could not read (the run's own permissions); what it
		// could read is still collected.
		r.log.Warn("tar of /work/output", "stderr", strings.TrimSpace(tarErr.String()))
	}
	if fn == nil {
		return result, budget.LeftOut, nil
	}
	return result, budget.LeftOut, fn(dir)
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(int64(len(p)), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// extract unpacks a tar of result.json and output/ into dir (output's members at its
// top) and returns result.json's bytes. The tar comes from inside the container, so it
// is the tool's to shape: every path is resolved through an os.Root, which no symlink or
// ".." can leave, and symlinks are recreated as links only, for the caller to report.
// A regular file is written only when budget keeps it.
func extract(tr *tar.Reader, dir string, budget *runner.OutputBudget) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var result []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return result, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the output tar: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "result.json" && (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeGNUSparse) {
			if result, err = io.ReadAll(io.LimitReader(tr, maxResultBytes+1)); err != nil {
				return nil, err
			}
			continue
		}
		if name == "output" {
			continue
		}
		rel, ok := strings.CutPrefix(name, "output/")
		if !ok || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("output tar member %q leaves /work/output", h.Name)
		}
		if d := path.Dir(rel); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("output tar member %q: %w", h.Name, err)
			}
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(rel, 0o755); err != nil {
				return nil, fmt.Errorf("output tar member %q: %w", h.Name, err)
			}
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, rel); err != nil {
				return nil, fmt.Errorf("output tar member %q: %w", h.Name, err)
			}
		case tar.TypeReg, tar.TypeGNUSparse:
			if !budget.Keep(rel, h.Size) {
				continue
			}
			f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return nil, fmt.Errorf("output tar member %q: %w", h.Name, err)
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			f.Close()
			if err != nil {
				return nil, err
			}
		default:
			// Devices, fifos and hard links are not artifacts: leave them out.
		}
	}
}

// markerWriter passes stderr through until the supervisor's marker line, whose exit code
// it sends on done; the marker itself never reaches the run's stderr.
// output reads an attached exec's stream: stdout and stderr captured (logBytes of each
// kept, lines to onLine), the supervisor's end marker taken out of stderr and sent on
// done, and streamed closed when the stream ends.
type output struct {
	stdout, stderr *runner.Capture
	done           chan ending
	streamed       chan struct{}
}

func readOutput(src io.Reader, token string, logBytes int64, onLine func(stream string, line []byte)) *output {
	o := &output{
		stdout:   &runner.Capture{Max: logBytes, Stream: "stdout", OnLine: onLine},
		stderr:   &runner.Capture{Max: logBytes, Stream: "stderr", OnLine: onLine},
		done:     make(chan ending, 1),
		streamed: make(chan struct{}),
	}
	marker := &markerWriter{next: o.stderr, token: []byte("\n" + token + " "), done: o.done}
	go func() {
		stdcopy.StdCopy(o.stdout, marker, src)
		close(o.streamed)
	}()
	return o
}

// into puts what was captured into res; call it once the stream has ended or been cut.
func (o *output) into(res *runner.ExecResult) {
	o.stdout.Flush()
	o.stderr.Flush()
	res.Stdout, res.StdoutTruncated = o.stdout.Bytes()
	res.Stderr, res.StderrTruncated = o.stderr.Bytes()
}

type markerWriter struct {
	mu    sync.Mutex
	next  io.Writer
	token []byte
	buf   []byte
	done  chan ending
	seen  bool
}

// ending is what the supervisor reports when the tool's process is over.
type ending struct {
	code     int
	oomKills int
}

func (m *markerWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen {
		return len(p), nil
	}
	m.buf = append(m.buf, p...)
	if i := bytes.Index(m.buf, m.token); i >= 0 {
		if end := bytes.IndexByte(m.buf[i+len(m.token):], '\n'); end >= 0 {
			var e ending
			fields := strings.Fields(string(m.buf[i+len(m.token) : i+len(m.token)+end]))
			if len(fields) > 0 {
				e.code, _ = strconv.Atoi(fields[0])
			}
			if len(fields) > 1 {
				e.oomKills, _ = strconv.Atoi(fields[1])
			}
			m.next.Write(m.buf[:i])
			m.seen = true
			m.done <- e
			return len(p), nil
		}
		return len(p), nil // the marker is not complete yet
	}
	// Keep a tail that may be the start of the marker; pass the rest on.
	keep := len(m.token)
	if len(m.buf) > keep {
		m.next.Write(m.buf[:len(m.buf)-keep])
		m.buf = append(m.buf[:0], m.buf[len(m.buf)-keep:]...)
	}
	return len(p), nil
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "skrip-done-" + hex.EncodeToString(b)
}
