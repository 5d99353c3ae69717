package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/moby/moby/client"
	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/runner/docker"
)

func (e *env) runnerImageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "runner-image", Short: "Build the sandbox image the Docker runner uses (no registry needed)"}
	cmd.AddCommand(e.runnerImageBuildCmd())
	return cmd
}

func (e *env) runnerImageBuildCmd() *cobra.Command {
	var rootfs, tag string
	var force bool
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the runner rootfs with debootstrap and import it into the Docker Engine",
		Long: "Build a Debian bookworm root filesystem with python3, WeasyPrint and fonts (debootstrap, as root;\n" +
			"it is kept and reused), then import it into the local Docker Engine as the runner image, labelled\n" +
			"skrip.runner=1. No registry is needed. The same folder serves the bwrap runner as\n" +
			"SKRIP_BWRAP_ROOTFS, so both runners can offer the very same environment.\n\n" +
			"--rootfs defaults to <data-dir>/runner-rootfs, --tag to SKRIP_RUNNER_IMAGE or skrip-runner:<version>.\n" +
			"An image that already exists is left alone unless --force is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := e.loadConfig(cmd)
			if err != nil {
				return err
			}
			cfg := loaded.Config
			if rootfs == "" {
				rootfs = cfg.Path("runner-rootfs")
			}
			if rootfs, err = filepath.Abs(rootfs); err != nil {
				return err
			}
			if tag == "" {
				tag = cfg.RunnerImage
			}
			if tag == "" {
				tag = docker.DefaultImage()
			}
			return e.runnerImageBuild(cmd.Context(), rootfs, tag, force)
		},
	}
	cmd.Flags().StringVar(&rootfs, "rootfs", "", "folder of the rootfs to build or reuse (default <data-dir>/runner-rootfs)")
	cmd.Flags().StringVar(&tag, "tag", "", "image reference to import as (default SKRIP_RUNNER_IMAGE or skrip-runner:<version>)")
	cmd.Flags().BoolVar(&force, "force", false, "import again even when the image exists")
	config.RegisterFlags(cmd.Flags())
	return cmd
}

func (e *env) runnerImageBuild(ctx context.Context, rootfs, tag string, force bool) error {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, engineErr := cli.Ping(pingCtx, client.PingOptions{})
	cancel()

	// The rootfs is worth building without an engine too: bwrap can use it.
	if _, err := os.Stat(filepath.Join(rootfs, ".skrip-rootfs-complete")); err == nil {
		fmt.Fprintf(e.stdout, "rootfs   %s (already built)\n", rootfs)
	} else {
		fmt.Fprintf(e.stderr, "building the rootfs in %s with debootstrap (a few minutes)…\n", rootfs)
		if err := docker.BuildRootfs(ctx, rootfs, e.stderr); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "rootfs   %s (built)\n", rootfs)
	}
	bwrapHint := fmt.Sprintf("  SKRIP_BWRAP_ROOTFS=%s  for the same environment under bubblewrap\n", rootfs)
	if engineErr != nil {
		fmt.Fprintf(e.stdout, "\nUse it:\n%s", bwrapHint)
		return fmt.Errorf("the Docker Engine does not answer, so no image was imported: %w; start it and run this again", engineErr)
	}

	exists, err := docker.ImageExists(ctx, cli, tag)
	if err != nil {
		return err
	}
	if exists && !force {
		fmt.Fprintf(e.stdout, "image    %s (exists; --force imports it again)\n", tag)
	} else {
		id, err := docker.ImportImage(ctx, cli, rootfs, tag)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "image    %s (imported, %s)\n", tag, id)
	}
	fmt.Fprintf(e.stdout, "\nUse it:\n  SKRIP_RUNNER=docker SKRIP_RUNNER_IMAGE=%s skrip serve\n%s", tag, bwrapHint)
	return nil
}
