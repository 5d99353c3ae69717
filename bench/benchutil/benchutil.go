// Package benchutil starts a whole skrip server in-process for the benchmark programs
// under bench/, with a client of it signed in as the admin.
package benchutil

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
)

// Defaults returns every setting at its default, with the data dir set to dataDir, a
// bootstrap admin token, and the bwrap runner (auto would pick Docker where its image
// exists, and its warm pool would run beside what is measured); a benchmark of the
// Docker runner sets Runner itself.
func Defaults(dataDir string) config.Config {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	loaded, err := config.Load(fs, func(string) string { return "" })
	if err != nil {
		log.Fatal(err)
	}
	cfg := loaded.Config
	cfg.DataDir = dataDir
	cfg.BootstrapAdminToken = "skr_benchmark-admin-token"
	cfg.Runner = "bwrap"
	return cfg
}

// Serve starts a server with cfg and returns an admin client and a function that stops
// the server. It exits the program when the server cannot start.
func Serve(ctx context.Context, cfg config.Config) (*client.Client, func()) {
	a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { a.Serve(sctx, ln); close(done) }()
	c, _ := client.New("http://"+ln.Addr().String(), cfg.BootstrapAdminToken)
	return c, func() { stop(); <-done; a.Close() }
}

// Timed returns how long f took.
func Timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
