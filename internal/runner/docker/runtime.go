package docker

import (
	"archive/tar"
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner/rootfs"
)

// Runtime reads the runtime the runner image holds from the image itself: its dpkg
// database, copied out of a container that is created from the image, never started, and
// removed. `skrip doctor` reports it; nothing of a tool runs.
func (r *Runner) Runtime(ctx context.Context) ([]rootfs.Component, error) {
	// Like prepare: creation is never cancelled halfway, so the id is always known.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	created, err := r.cli.ContainerCreate(cctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: r.image, Cmd: []string{"/usr/bin/true"}, User: "65534:65534",
			Labels: map[string]string{LabelServer: r.server}, NetworkDisabled: true},
		HostConfig: &container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating a container of %s to read its packages: %w", r.image, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	}()
	res, err := r.cli.CopyFromContainer(ctx, created.ID, client.CopyFromContainerOptions{SourcePath: "/" + rootfs.StatusFile})
	if err != nil {
		return nil, fmt.Errorf("reading /%s of %s: %w", rootfs.StatusFile, r.image, err)
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	if _, err := tr.Next(); err != nil {
		return nil, fmt.Errorf("reading /%s of %s: %w", rootfs.StatusFile, r.image, err)
	}
	installed, err := rootfs.Packages(tr)
	if err != nil {
		return nil, fmt.Errorf("reading /%s of %s: %w", rootfs.StatusFile, r.image, err)
	}
	return rootfs.Runtime(installed), nil
}

// Recipe returns the image's skrip.rootfs.recipe label ("" when it has none).
func (r *Runner) Recipe(ctx context.Context) (string, error) {
	return ImageRecipe(ctx, r.cli, r.image)
}
