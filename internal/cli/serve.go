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

func (e *env) serveCmd() *cobra.Command {
	var demo bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the skrip server (API, web UI, workers and janitor)",
		Long: "Run the skrip server. With no settings it uses SQLite and local files under ./skrip-data.\n\n" +
			settingsHelp(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := e.loadConfig(cmd)
			if err != nil {
				return err
			}
			cfg := loaded.Config
			log := e.newLogger(cfg)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			a, err := app.New(ctx, cfg, log)
			if err != nil {
				return err
			}
			defer a.Close()
			if demo {
				if _, err := a.LoadDemo(ctx); err != nil {
					return err
				}
			}
			ln, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				return fmt.Errorf("cannot listen on %s: %w (choose another with --addr or SKRIP_ADDR)", cfg.Addr, err)
			}
			return a.Serve(ctx, ln)
		},
	}
	config.RegisterFlags(cmd.Flags())
	cmd.Flags().BoolVar(&demo, "demo", false, "load the example tools (examples/tools) if they are not there yet")
	return cmd
}
