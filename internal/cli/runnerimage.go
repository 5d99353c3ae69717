package cli

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/moby/moby/client"
	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
)

func (e *env) runnerImageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "runner-image", Short: "Build the sandbox image the Docker runner uses (no registry needed)"}
	cmd.AddCommand(e.runnerImageBuildCmd())
	return cmd
}

func (e *env) runnerImageBuildCmd() *cobra.Command {
	var dir, tag string
	var force bool
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the runner rootfs with debootstrap and import it into the Docker Engine",
		Long: "Build the runner's Debian 13 root filesystem (Python 3.13, WeasyPrint, pandoc, python-docx, openpyxl,\n" +
			"pandas, pypdf, Jinja2, rsvg-convert and fonts) with debootstrap, as root, then import it into the local\n" +
			"Docker Engine as the runner image, labelled skrip.runner=1. No registry is needed. The same folder is the\n" +
			"bwrap runner's root, so both runners offer the very same environment.\n\n" +
			"--rootfs defaults to SKRIP_BWRAP_ROOTFS or " + rootfs.DefaultDir + " (where the bwrap runner looks\n" +
			"when SKRIP_BWRAP_ROOTFS is empty), --tag to SKRIP_RUNNER_IMAGE or skrip-runner:<version>.\n" +
			"Both are kept and reused: a rootfs is rebuilt, and an image imported again, only when they were made by\n" +
			"another recipe than this skrip's (or with --force, for the image).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := e.loadConfig(cmd)
			if err != nil {
				return err
			}
			cfg := loaded.Config
			if dir == "" {
				dir = rootfs.DefaultDir
				if cfg.BwrapRootfs != rootfs.Host {
					dir = cmp.Or(cfg.BwrapRootfs, dir)
				}
			}
			if dir, err = filepath.Abs(dir); err != nil {
				return err
			}
			if tag == "" {
				tag = cfg.RunnerImage
			}
			if tag == "" {
				tag = docker.DefaultImage()
			}
			return e.runnerImageBuild(cmd.Context(), dir, tag, force)
		},
	}
	cmd.Flags().StringVar(&dir, "rootfs", "", "folder of the rootfs to build or reuse (default SKRIP_BWRAP_ROOTFS or "+rootfs.DefaultDir+")")
	cmd.Flags().StringVar(&tag, "tag", "", "image reference to import as (default SKRIP_RUNNER_IMAGE or skrip-runner:<version>)")
	cmd.Flags().BoolVar(&force, "force", false, "import again even when the image exists")
	config.RegisterFlags(cmd.Flags())
	return cmd
}

func (e *env) runnerImageBuild(ctx context.Context, dir, tag string, force bool) error {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, engineErr := cli.Ping(pingCtx, client.PingOptions{})
	cancel()

	// The rootfs is worth building without an engine too: bwrap can use it.
	before, err := rootfs.Inspect(dir)
	if err != nil {
		return err
	}
	if before.Current() {
		fmt.Fprintf(e.stdout, "rootfs   %s (already built: %s)\n", dir, before.Describe())
	} else {
		if before.Complete {
			fmt.Fprintf(e.stderr, "rebuilding the rootfs in %s with debootstrap, since it was %s (a few minutes)…\n", dir, before.Describe())
		} else {
			fmt.Fprintf(e.stderr, "building the rootfs in %s with debootstrap (a few minutes)…\n", dir)
		}
		if err := rootfs.Build(ctx, dir, e.stderr); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "rootfs   %s (built)\n", dir)
	}
	st, err := rootfs.Inspect(dir)
	if err != nil {
		return err
	}
	bwrapHint := fmt.Sprintf("  SKRIP_BWRAP_ROOTFS=%s  for the same environment under bubblewrap\n", dir)
	if dir == rootfs.DefaultDir {
		bwrapHint = "  the bwrap runner uses it too while SKRIP_BWRAP_ROOTFS is empty: the very same environment\n"
	}
	if engineErr != nil {
		fmt.Fprintf(e.stdout, "\nUse it:\n%s", bwrapHint)
		return fmt.Errorf("the Docker Engine does not answer, so no image was imported: %w; start it and run this again", engineErr)
	}

	exists, err := docker.ImageExists(ctx, cli, tag)
	if err != nil {
		return err
	}
	recipe := ""
	if exists {
		if recipe, err = docker.ImageRecipe(ctx, cli, tag); err != nil {
			return err
		}
	}
	switch {
	case exists && recipe == st.Recipe && !force:
		fmt.Fprintf(e.stdout, "image    %s (exists, from this rootfs's recipe; --force imports it again)\n", tag)
	default:
		id, err := docker.ImportImage(ctx, cli, dir, tag)
		if err != nil {
			return err
		}
		why := "imported"
		if exists && recipe != st.Recipe {
			why = "imported again: the image was from another recipe"
		}
		fmt.Fprintf(e.stdout, "image    %s (%s, %s)\n", tag, why, id)
	}
	fmt.Fprintf(e.stdout, "\nUse it:\n  SKRIP_RUNNER=docker SKRIP_RUNNER_IMAGE=%s skrip serve\n%s", tag, bwrapHint)
	return nil
}
