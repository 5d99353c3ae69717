package cli

import (
	"fmt"
	"net"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/config"
)

func (e *env) workerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run tools for a cluster of skrip servers (docs/cluster.md)",
		Long: "Run a worker of a skrip cluster: it takes runs from the cluster's NATS JetStream queue and runs them in its\n" +
			"sandbox. It needs SKRIP_NATS_URL and its NATS credentials, never the database URL. It serves /healthz,\n" +
			"/readyz and /metrics on SKRIP_ADDR.\n\n" + settingsHelp(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := e.loadConfig(cmd)
			if err != nil {
				return err
			}
			cfg := loaded.Config
			if err := app.CheckWorker(cfg); err != nil {
				return err
			}
			log := e.newLogger(cfg)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			ln, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				return fmt.Errorf("cannot listen on %s: %w (choose another with --addr or SKRIP_ADDR)", cfg.Addr, err)
			}
			return app.RunWorker(ctx, cfg, ln, log)
		},
	}
	config.RegisterFlags(cmd.Flags())
	return cmd
}
