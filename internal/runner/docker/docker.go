// Package docker runs tool runs in containers through the Docker Engine API: one
// container per run with no network, a read-only root, no capabilities, a non-root user
// and memory, pids and CPU limits; files are copied in before start and the artifacts out
// as a checked tar stream; the container is always removed.
package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner"
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
	// WarmMemory is what containers parked with Python started ahead of runs may hold
	// together (SKRIP_RUNNER_WARM_MEMORY); 0 parks none (warm.go).
	WarmMemory int64
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
	warm    *warmPool // containers with Python started ahead of runs (warm.go)
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
	r := &Runner{cli: cli, image: cfg.Image, server: ServerLabel(cfg.Server), log: log, warm: newWarmPool(cfg.WarmMemory)}
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
	r.warm.closeAll(r)
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
