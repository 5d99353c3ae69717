package docker

// This file makes and removes a run's container: created with the run's limits, attached
// and started, always removed with its volume, and swept at start when a crash left it.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner"
)

// box is a created, attached and started container whose supervisor waits for its
// run.
type box struct {
	id     string
	att    client.ContainerAttachResult
	waiter client.ContainerWaitResult
}

// prepare creates, attaches and starts a container with limits l; runID and toolID label
// it when known (a pooled container gets them only in the log).
func (r *Runner) prepare(ctx context.Context, l runner.Limits, runID, toolID string) (*box, error) {
	return r.create(ctx, l, runID, toolID, []string{"/bin/sh", "-c", supervisor}, []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, nil)
}

// create is prepare with the container's command and environment given, and files (a
// tar, or nil) copied into /work before it starts.
func (r *Runner) create(ctx context.Context, l runner.Limits, runID, toolID string, cmd, env []string, files io.Reader) (*box, error) {
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
			Image: r.image, Cmd: cmd, Env: env,
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
	if files != nil {
		if _, err := r.cli.CopyToContainer(ctx, c.id, client.CopyToContainerOptions{DestinationPath: "/work", Content: files}); err != nil {
			return fail(fmt.Errorf("copying the shim in: %w", err))
		}
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
