package docker

// This file runs one tool run in a container: the supervisor that waits for the run's
// start line, the files copied in, and the wait for the end.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner"
)

// supervisor is the container's first process. It waits for its run's start line on
// stdin (a marker token and the wall time in seconds), so that a container can be created
// and started ahead of its run (the pool); takes the run's environment from the file
// copied in with the inputs; runs the shim under timeout(1), with /dev/null as stdin (the
// container's stays open: a tool reading it would wait for its wall time, where a warm
// start, and bwrap, give it an empty one); reports the exit code and
// the cgroup's OOM kill count after the marker on stderr (the engine's State.OOMKilled
// only notices a kill of the first process, which is this one); and waits, so that
// /work/output (a tmpfs) is still there to copy out.
const supervisor = `read -r token wall fsize || exit 0
set -a
. /work/.skrip/env
set +a
mkdir -p "$HOME" "$XDG_CACHE_HOME"
ulimit -f "$fsize"
timeout -s KILL "$wall" python3 -s -B /work/.skrip/skrip_shim.py </dev/null
code=$?
# Nothing the tool started may outlive it: collection must not race a process of the run.
kill -KILL -1 2>/dev/null
oom=$(cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null | awk '$1 == "oom_kill" { print $2; exit }')
printf '\n%s %s %s\n' "$token" "$code" "${oom:-0}" >&2
exec sleep 2147483647`

// shimBin is where a run finds the shim's commands: the shim is copied in under
// /work/.skrip, not mounted at shim.Dir.
const shimBin = "/work/.skrip/bin"

// envFile is the run's environment as shell assignments the supervisor sources.
func envFile(spec runner.Spec) []byte {
	env := runner.RunEnv("/tmp/home", shimBin, spec.Env)
	var b bytes.Buffer
	for _, k := range runner.SortedKeys(env) {
		fmt.Fprintf(&b, "%s='%s'\n", k, strings.ReplaceAll(env[k], "'", `'\''`))
	}
	return b.Bytes()
}

// fsizeBlocks is the run's ulimit -f in blocks: every file it writes is capped at the
// output limit, since result.json is on the volume.
func fsizeBlocks(l runner.Limits) int64 {
	return (max(l.OutputBytes, maxResultBytes) + 511) / 512
}

// Run implements runner.Runner. It takes a container with Python started and modules the
// run's script imports already imported when one is parked (warm.go), else a started
// container from the pool when one with the run's limits is there, and makes one
// otherwise.
func (r *Runner) Run(ctx context.Context, spec runner.Spec) (runner.Result, error) {
	l := spec.Limits
	token := randomToken()
	wall := int64(l.WallTime / time.Second)
	if wall < 1 {
		wall = 1
	}
	modules := runner.Imports(spec.Script)
	defer r.warm.refill(r, modules, l)
	tar, err := inputTar(spec, envFile(spec))
	if err != nil {
		return runner.Result{}, err
	}
	in, err := io.ReadAll(tar)
	if err != nil {
		return runner.Result{}, err
	}
	var c *box
	var stream io.Reader // the attach stream: a warm one's holds what Python wrote before its run
	start := time.Now()  // a warm run's wall time includes the wait for its imports
	if w := r.warm.take(modules, l); w != nil {
		switch err := r.startWarm(ctx, w, l, in, token, start); {
		case err == nil:
			c, stream = w.c, io.MultiReader(bytes.NewReader(w.early), w.stream)
			defer r.remove(c.id)
			defer c.att.Close()
			r.log.Debug("run in a container with Python started", "run", spec.ID, "container", c.id, "modules", w.key)
		case errors.Is(err, errWarmDead):
			r.log.Warn("a warm container had ended; the run starts cold", "run", spec.ID, "error", err)
		case errors.Is(err, errWarmWall):
			// As a cold start still importing them would have ended: killed at the wall time.
			return runner.Result{ExecResult: runner.ExecResult{ExitCode: 137, TimedOut: true, Duration: time.Since(start)}}, nil
		default:
			return runner.Result{}, err
		}
	}
	if c == nil {
		if c = r.pool.take(l); c != nil {
			r.log.Debug("run in a pooled container", "run", spec.ID, "container", c.id)
		} else {
			if c, err = r.prepare(ctx, l, spec.ID, spec.ToolID); err != nil {
				return runner.Result{}, err
			}
		}
		stream = c.att.Reader
		// The container serves this run only, and is always removed with its volume (so
		// is a warm one, above).
		defer r.remove(c.id)
		defer c.att.Close()
		if err := r.start(ctx, c, in, fmt.Sprintf("%s %d %d\n", token, wall, fsizeBlocks(l))); err != nil {
			return runner.Result{}, err
		}
		start = time.Now()
	}
	out := readOutput(stream, token, l.LogBytes, spec.OnLine)
	id, waiter := c.id, c.waiter
	res := runner.Result{ExecResult: runner.ExecResult{ExitCode: -1}}
	deadline := time.NewTimer(time.Until(start.Add(l.WallTime)) + killGrace)
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

// start copies a run's inputs into c and sends its supervisor the start line.
func (r *Runner) start(ctx context.Context, c *box, in []byte, line string) error {
	if _, err := r.cli.CopyToContainer(ctx, c.id, client.CopyToContainerOptions{DestinationPath: "/work", Content: bytes.NewReader(in)}); err != nil {
		return fmt.Errorf("copying the inputs in: %w", err)
	}
	if _, err := io.WriteString(c.att.Conn, line); err != nil {
		return fmt.Errorf("starting the run: %w", err)
	}
	return nil
}
