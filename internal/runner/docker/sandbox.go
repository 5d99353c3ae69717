package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner"
)

// A persistent sandbox is one long-lived container, skrip-sbx-<id>, with the flags of a
// run's container and a tmpfs /workspace of the box's quota. Every exec and every file
// read or write goes through the engine's exec API as the sandbox user, so paths are
// resolved inside the container, where a symlink means what it means to the agent.

// Labels of a sandbox container. They differ from a run's, so that removing a crash's
// orphan runs never touches a sandbox.
const (
	LabelSandboxID     = "skrip.sandbox_id"
	LabelSandboxServer = "skrip.sandbox_server"
)

const sandboxUser = "65534:65534"

// keeper is a sandbox container's first process: pid 1, waiting on sleep so that it
// reaps the orphans execs leave behind. It ignores every signal it may: pid 1 of a pid
// namespace gets from inside only the signals it handles, but the shell handles SIGINT
// unless told not to. So no exec can end the container (removing it is a SIGKILL from
// outside).
const keeper = `trap '' HUP INT QUIT TERM USR1 USR2 ALRM PIPE; while :; do sleep 86400 & wait $!; done`

// execWrapper reads its marker token from the first line of stdin (not argv, which the
// command could read in /proc and forge a result with), runs the command under
// timeout(1) with the rest of stdin, then kills whatever the command left
// (kill -1 spares pid 1 and the wrapper itself), empties /tmp, and reports the exit code
// and the OOM kills of the container's cgroup during the exec after the marker on stderr.
// Only timeout(1), the command (through runner.ExecArgv, which execs it in its place)
// and, when /tmp holds anything, find(1) are forked: every exec pays for what the wrapper
// starts.
const execWrapper = `read -r token || exit 0
wall=$1; shift
oom() {
  n=0
  for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
    [ -r "$f" ] || continue
    while read -r k v; do [ "$k" = oom_kill ] && n=$v; done < "$f"
  done
}
oom; before=$n
timeout -s KILL "$wall" "$@"
code=$?
kill -KILL -1 2>/dev/null
for x in /tmp/* /tmp/.[!.]* /tmp/..?*; do
  if [ -e "$x" ] || [ -L "$x" ]; then find /tmp -mindepth 1 -delete 2>/dev/null; break; fi
done
oom
printf '\n%s %s %s\n' "$token" "$code" "$((n - before))" >&2`

// Exit codes of the file scripts below.
const (
	exitOutside  = 64
	exitIsDir    = 65
	exitParent   = 66
	exitWrite    = 68
	exitShort    = 69
	exitNotExist = 70
	exitNotFile  = 71
)

// resolveScript resolves $1 under /workspace as the container sees it and leaves the
// result in $p, or exits with one of the codes above.
const resolveScript = `p=$(realpath -m -- "/workspace/$1") || exit 64
case "$p" in /workspace/?*) ;; *) exit 64;; esac
`

// writeScript fills a temporary file beside the target, .skrip-partial-$2, from stdin;
// commitScript checks its size ($3) and renames it over the target; dropScript removes it.
const writeScript = resolveScript + `[ ! -d "$p" ] || exit 65
d=${p%/*}
mkdir -p -- "$d" || exit 66
t="$d/.skrip-partial-$2"
cat > "$t" || { rm -f -- "$t"; exit 68; }`

const commitScript = resolveScript + `t="${p%/*}/.skrip-partial-$2"
[ "$(stat -c %s -- "$t")" = "$3" ] || { rm -f -- "$t"; exit 69; }
mv -f -T -- "$t" "$p"`

const dropScript = resolveScript + `rm -f -- "${p%/*}/.skrip-partial-$2"`

// statScript prints the size and the resolved path of a regular file.
const statScript = resolveScript + `[ -e "$p" ] || exit 70
[ ! -d "$p" ] || exit 65
[ -f "$p" ] || exit 71
stat -c %s -- "$p"
printf '%s' "$p"`

func boxName(id string) string { return "skrip-sbx-" + id }

// boxMemory is a sandbox container's memory limit: its processes' limit, plus room for
// its /workspace (with its files' metadata) and /tmp tmpfs mounts, whose files are
// charged to the container.
func boxMemory(l runner.Limits, workspaceBytes int64) int64 {
	return l.MemoryBytes + runner.WorkspaceMemory(workspaceBytes) + max(l.TmpBytes, 4096)
}

// scriptTimeout bounds a file script that the caller cannot cancel (committing or
// dropping a write), so that an engine that hangs never holds a sandbox for good.
const scriptTimeout = 30 * time.Second

// CreateBox implements runner.Sandboxes.
func (r *Runner) CreateBox(ctx context.Context, spec runner.BoxSpec) error {
	l := spec.Limits
	pids := int64(l.Pids)
	env := runner.Env(runner.Workspace, nil)
	envList := make([]string, 0, len(env))
	for _, k := range runner.SortedKeys(env) {
		envList = append(envList, k+"="+env[k])
	}
	// The tmpfs mounts are charged to the container's memory: they get room of their own
	// on top of the processes' limit, so a full workspace never starves an exec.
	mem := boxMemory(l, spec.WorkspaceBytes)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	created, err := r.cli.ContainerCreate(cctx, client.ContainerCreateOptions{
		Name: boxName(spec.ID),
		Config: &container.Config{
			Image: r.image, Cmd: []string{"/bin/sh", "-c", keeper}, Env: envList,
			User: sandboxUser, WorkingDir: runner.Workspace, NetworkDisabled: true,
			Labels: map[string]string{LabelSandboxID: spec.ID, LabelSandboxServer: r.server},
		},
		HostConfig: &container.HostConfig{
			NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, SecurityOpt: r.securityOpt,
			Resources: container.Resources{Memory: mem, MemorySwap: mem, PidsLimit: &pids, NanoCPUs: int64(l.CPUs * 1e9)},
			Tmpfs: map[string]string{
				"/tmp": fmt.Sprintf("size=%d,mode=1777", max(l.TmpBytes, 4096)),
				// The engine resets the mode of a tmpfs that is the working directory:
				// give it to the sandbox user instead. exec: tools run their own scripts.
				runner.Workspace: fmt.Sprintf("size=%d,nr_inodes=%d,uid=65534,gid=65534,mode=0755,exec",
					runner.WorkspaceSize(spec.WorkspaceBytes), runner.WorkspaceInodes(spec.WorkspaceBytes)),
			},
		},
	})
	if err != nil {
		return fmt.Errorf("creating the sandbox container: %w", err)
	}
	if _, err := r.cli.ContainerStart(cctx, created.ID, client.ContainerStartOptions{}); err != nil {
		r.remove(created.ID)
		return fmt.Errorf("starting the sandbox container: %w", err)
	}
	return nil
}

// RemoveBox implements runner.Sandboxes.
func (r *Runner) RemoveBox(ctx context.Context, id string) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := r.cli.ContainerRemove(rctx, boxName(id), client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing sandbox %s: %w", id, err)
	}
	return nil
}

// Boxes implements runner.Sandboxes. A container that is not running any more (the
// engine or the machine restarted, and its tmpfs workspace with it) is removed.
func (r *Runner) Boxes(ctx context.Context) ([]string, error) {
	list, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelSandboxServer+"="+r.server)})
	if err != nil {
		return nil, fmt.Errorf("listing sandbox containers: %w", err)
	}
	var out []string
	for _, c := range list.Items {
		if c.State != container.StateRunning {
			r.log.Info("removing a sandbox container that stopped", "sandbox", c.Labels[LabelSandboxID], "state", c.State)
			r.remove(c.ID)
			continue
		}
		out = append(out, c.Labels[LabelSandboxID])
	}
	return out, nil
}

// BoxEnforcement implements runner.Sandboxes.
func (r *Runner) BoxEnforcement(l runner.Limits, workspaceBytes int64) []runner.Enforced {
	return []runner.Enforced{
		{Limit: "wall time", How: "per exec (timeout_s): timeout(1), then every process of the sandbox user is killed", OK: true},
		{Limit: "memory", How: "HostConfig.Memory = MemorySwap = " + runner.HumanBytes(boxMemory(l, workspaceBytes)) + " for the container: " + runner.HumanBytes(l.MemoryBytes) + " for its processes plus room for the files in its /workspace and /tmp (tmpfs)", OK: true},
		{Limit: "pids", How: fmt.Sprintf("HostConfig.PidsLimit = %d", l.Pids), OK: true},
		{Limit: "cpu", How: fmt.Sprintf("HostConfig.NanoCPUs (%g CPU)", l.CPUs), OK: true},
		{Limit: "/workspace", How: fmt.Sprintf("%s tmpfs of the container, of at most %d files and directories, kept between execs",
			runner.HumanBytes(workspaceBytes), runner.WorkspaceInodes(workspaceBytes)), OK: true},
		{Limit: "/tmp", How: runner.HumanBytes(l.TmpBytes) + " tmpfs, emptied after each exec", OK: true},
		{Limit: "stdout/stderr", How: fmt.Sprintf("first %d bytes of each kept per exec", l.LogBytes), OK: true},
		{Limit: "network", How: "NetworkMode none", OK: true},
		hostUID, syscalls,
	}
}

// Memory implements runner.Sandboxes: the workspaces are tmpfs mounts of the engine's
// machine, which is not this one when DOCKER_HOST names another.
func (r *Runner) Memory(ctx context.Context) (runner.Memory, error) {
	info, err := r.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return runner.Memory{}, fmt.Errorf("asking the Docker engine for its memory: %w", err)
	}
	if info.Info.MemTotal <= 0 {
		return runner.Memory{}, errors.New("the Docker engine reports no memory (MemTotal of docker info)")
	}
	return runner.Memory{Bytes: info.Info.MemTotal, Source: "MemTotal of the Docker engine's machine"}, nil
}

// noBox turns the engine's answer to an exec in a container that is gone (404) or
// stopped (409) into ErrNoBox. Execs name the container: asking first would cost every
// exec another round trip.
func noBox(container string, err error) error {
	if cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) {
		return fmt.Errorf("%s: %w (%v)", container, runner.ErrNoBox, err)
	}
	return err
}

// Exec implements runner.Sandboxes.
func (r *Runner) Exec(ctx context.Context, id string, spec runner.ExecSpec) (runner.ExecResult, error) {
	if len(spec.Cmd) == 0 {
		return runner.ExecResult{}, errors.New("exec needs a command")
	}
	cid := boxName(id)
	token := randomToken()
	wall := int64(math.Ceil(spec.Timeout.Seconds()))
	cmd := append([]string{"/bin/sh", "-c", execWrapper, "sh", strconv.FormatInt(max(wall, 1), 10)}, runner.ExecArgv(spec.Cmd)...)
	ex, err := r.cli.ExecCreate(ctx, cid, client.ExecCreateOptions{User: sandboxUser, WorkingDir: runner.Workspace, Cmd: cmd,
		AttachStdin: true, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return runner.ExecResult{}, fmt.Errorf("creating the exec: %w", noBox(cid, err))
	}
	att, err := r.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return runner.ExecResult{}, fmt.Errorf("starting the exec: %w", err)
	}
	defer att.Close()
	out := readOutput(att.Reader, token, spec.LogBytes, spec.OnLine)
	go func() {
		att.Conn.Write(append([]byte(token+"\n"), spec.Stdin...))
		att.CloseWrite()
	}()
	start := time.Now()
	res := runner.ExecResult{ExitCode: -1}
	deadline := time.NewTimer(spec.Timeout + killGrace)
	defer deadline.Stop()
	select {
	case end := <-out.done:
		// The wrapper killed what the command left before it reported, and exits right
		// after. A marker the command forged (it read the token somehow) is followed by
		// no exit: the exec is then still running at the deadline, and killed there.
		select {
		case <-out.streamed:
			res.ExitCode, res.OOMKilled = end.code, end.oomKills > 0
			res.TimedOut = end.code == 137 && !res.OOMKilled && time.Since(start) >= spec.Timeout-100*time.Millisecond
		case <-deadline.C:
			res.TimedOut, res.ExitCode = true, 137
			r.killAll(ctx, cid)
		case <-ctx.Done():
			r.killAll(ctx, cid)
		}
	case <-out.streamed:
		// The wrapper itself was killed (the memory limit, or the command): no marker,
		// and maybe processes left behind.
		r.killAll(ctx, cid)
		if insp, err := r.cli.ExecInspect(context.WithoutCancel(ctx), ex.ID, client.ExecInspectOptions{}); err == nil {
			res.ExitCode = insp.ExitCode
		}
	case <-deadline.C:
		res.TimedOut, res.ExitCode = true, 137
		r.killAll(ctx, cid)
	case <-ctx.Done():
		r.killAll(ctx, cid)
	}
	res.Duration = time.Since(start)
	// The engine does not keep stdout's and stderr's frames in order: take what is
	// still on its way before hanging up.
	select {
	case <-out.streamed:
	case <-time.After(2 * time.Second):
	}
	att.Close()
	<-out.streamed
	out.into(&res)
	if res.TimedOut {
		return res, nil
	}
	return res, ctx.Err()
}

// killAll kills every process of the sandbox user in container cid but pid 1.
func (r *Runner) killAll(ctx context.Context, cid string) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, _, err := r.script(kctx, cid, "kill -KILL -1", nil, nil, nil); err != nil {
		r.log.Warn("killing a sandbox's processes", "container", cid, "error", err)
	}
}

// script runs sh -c body with args as the sandbox user in container cid, feeding it
// stdin (when set) and copying its stdout to out (when set). It returns the exit code
// and the first 64 KiB of stderr; err is for the engine, or a stdin that failed.
func (r *Runner) script(ctx context.Context, cid, body string, args []string, stdin io.Reader, out io.Writer) (int, string, error) {
	ex, err := r.cli.ExecCreate(ctx, cid, client.ExecCreateOptions{User: sandboxUser, WorkingDir: runner.Workspace,
		Cmd: append([]string{"/bin/sh", "-c", body, "sh"}, args...), AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return -1, "", noBox(cid, err)
	}
	att, err := r.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1, "", err
	}
	defer att.Close()
	if out == nil {
		out = io.Discard
	}
	errBuf := &runner.Capture{Max: 64 << 10}
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(out, errBuf, att.Reader)
		copied <- err
	}()
	// stdin is copied beside the output: a script that stops reading (a full workspace)
	// ends the output, and then the copy is cut short.
	var inErr error
	var inDone chan error
	if stdin != nil {
		inDone = make(chan error, 1)
		go func() {
			_, err := io.Copy(att.Conn, runner.ContextReader(ctx, stdin))
			if err == nil {
				err = att.CloseWrite()
			}
			inDone <- err
		}()
	}
	for waiting := true; waiting; {
		select {
		case err = <-copied:
			waiting = false
		case inErr = <-inDone:
			inDone = nil
			if inErr != nil {
				// Hanging up ends the script's stdin: the caller learns of inErr,
				// whatever the script makes of a short input.
				att.Close()
			}
		case <-ctx.Done():
			return -1, "", ctx.Err()
		}
	}
	if inDone != nil {
		// The output ended first: the script is over. Its input copy is ending too (it
		// closed the input just before), unless the script stopped reading it early.
		select {
		case inErr = <-inDone:
		case <-time.After(time.Second):
			att.Close()
			inErr = errors.New("the sandbox stopped reading the input")
		}
	}
	if err != nil && inErr == nil {
		return -1, "", err
	}
	insp, err := r.cli.ExecInspect(context.WithoutCancel(ctx), ex.ID, client.ExecInspectOptions{})
	if err != nil {
		return -1, "", err
	}
	msg, _ := errBuf.Bytes()
	for deadline := time.Now().Add(10 * time.Second); inErr != nil && (insp.Running || insp.PID == 0) && time.Now().Before(deadline); {
		// The script is still on its way out (its stdin just closed), or on a busy host
		// not yet started (no pid): wait, so that nothing it does comes after what the
		// caller does next (a failed write's clean-up before its late `cat` left a
		// partial file behind).
		time.Sleep(20 * time.Millisecond)
		if insp, err = r.cli.ExecInspect(context.WithoutCancel(ctx), ex.ID, client.ExecInspectOptions{}); err != nil {
			return -1, "", err
		}
	}
	if inErr != nil && (insp.Running || insp.ExitCode == 0) {
		// The script did not refuse the input: the input failed.
		return -1, "", inErr
	}
	return insp.ExitCode, strings.TrimSpace(string(msg)), nil
}

// pathError turns a file script's exit code into the error it means for path p.
func pathError(code int, stderr, p string, quota int64) error {
	switch code {
	case exitOutside:
		return runner.Refuse(runner.ErrPath, "%s leads outside %s through a symlink", p, runner.Workspace)
	case exitIsDir:
		return runner.Refuse(runner.ErrPath, "%s is a directory, not a file", p)
	case exitParent:
		if strings.Contains(stderr, "No space left") {
			return runner.Refuse(runner.ErrNoSpace, "%s does not fit in the workspace's %s", p, runner.HumanBytes(quota))
		}
		return runner.Refuse(runner.ErrPath, "cannot make the directories of %s (a parent is a file, or not writable)", p)
	case exitNotExist:
		return runner.Refuse(runner.ErrNoFile, "%s", p)
	case exitNotFile:
		return runner.Refuse(runner.ErrPath, "%s is not a regular file", p)
	case exitShort:
		return fmt.Errorf("writing %s: the workspace file does not hold every byte sent", p)
	}
	if strings.Contains(stderr, "No space left") || strings.Contains(stderr, "File too large") {
		return runner.Refuse(runner.ErrNoSpace, "%s does not fit in the workspace's %s", p, runner.HumanBytes(quota))
	}
	if strings.Contains(stderr, "Permission denied") {
		return runner.Refuse(runner.ErrPath, "%s: permission denied (the sandbox changed its permissions)", p)
	}
	return fmt.Errorf("%s in the sandbox: exit %d: %s", p, code, stderr)
}

// quota returns the /workspace size of the box's container, for messages.
func (r *Runner) quota(ctx context.Context, cid string) int64 {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scriptTimeout)
	defer cancel()
	insp, err := r.cli.ContainerInspect(ictx, cid, client.ContainerInspectOptions{})
	if err != nil || insp.Container.HostConfig == nil {
		return 0
	}
	for _, opt := range strings.Split(insp.Container.HostConfig.Tmpfs[runner.Workspace], ",") {
		if v, ok := strings.CutPrefix(opt, "size="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// WriteFile implements runner.Sandboxes: stdin fills a temporary file beside the
// target; only a copy that ended well, with every byte in it, is renamed over the target.
func (r *Runner) WriteFile(ctx context.Context, id, p string, src io.Reader) (int64, error) {
	rel, err := runner.CleanPath(p)
	if err != nil {
		return 0, err
	}
	cid := boxName(id)
	tmp := randomToken()
	counted := &countReader{r: src}
	code, stderr, err := r.script(ctx, cid, writeScript, []string{rel, tmp}, counted, nil)
	if err == nil && code == 0 {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scriptTimeout)
		code, stderr, err = r.script(cctx, cid, commitScript, []string{rel, tmp, strconv.FormatInt(counted.n, 10)}, nil, nil)
		cancel()
		if err == nil && code == 0 {
			return counted.n, nil
		}
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scriptTimeout)
	defer cancel()
	r.script(dctx, cid, dropScript, []string{rel, tmp}, nil, nil)
	if err != nil {
		return counted.n, err
	}
	return counted.n, pathError(code, stderr, p, r.quota(ctx, cid))
}

// ReadFile implements runner.Sandboxes.
func (r *Runner) ReadFile(ctx context.Context, id, p string) (io.ReadCloser, int64, error) {
	rel, err := runner.CleanPath(p)
	if err != nil {
		return nil, 0, err
	}
	cid := boxName(id)
	var out bytes.Buffer
	code, stderr, err := r.script(ctx, cid, statScript, []string{rel}, nil, &out)
	if err != nil {
		return nil, 0, err
	}
	if code != 0 {
		return nil, 0, pathError(code, stderr, p, 0)
	}
	sizeText, resolved, _ := strings.Cut(out.String(), "\n")
	size, err := strconv.ParseInt(strings.TrimSpace(sizeText), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("stat of %s in the sandbox: %q", p, sizeText)
	}
	pr, pw := io.Pipe()
	go func() {
		code, stderr, err := r.script(ctx, cid, `exec cat -- "$1"`, []string{resolved}, nil, pw)
		if err == nil && code != 0 {
			err = fmt.Errorf("reading %s in the sandbox: exit %d: %s", p, code, stderr)
		}
		pw.CloseWithError(err)
	}()
	return runner.Exactly(pr, size, p), size, nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

var _ runner.Sandboxes = (*Runner)(nil)
