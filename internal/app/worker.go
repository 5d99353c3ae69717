package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skrip-dev/skrip/internal/api"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/version"
	"github.com/skrip-dev/skrip/internal/worker"
)

// CheckWorker refuses settings a worker must not have or cannot do without: a worker
// runs other people's code, so it never holds the database URL (docs/cluster.md).
func CheckWorker(cfg config.Config) error {
	if cfg.DatabaseURL != "" {
		return errors.New("SKRIP_DATABASE_URL is set, and a worker never holds the database URL: it runs untrusted code, and talks only to NATS (API nodes write the database); unset it for `skrip worker`")
	}
	if cfg.NATSURL == "" {
		return errors.New("SKRIP_NATS_URL is empty: a worker takes its runs from the cluster's NATS servers; set it, with the worker's NATS credentials (docs/cluster.md)")
	}
	if cfg.RunnerConcurrency == 0 {
		return errors.New("SKRIP_RUNNER_CONCURRENCY is 0: a worker runs at least one run at a time; set it to auto or a number")
	}
	return nil
}

// RunWorker is `skrip worker`: it executes the cluster's runs, and serves /healthz,
// /readyz and /metrics on ln, until ctx ends; then it lets its runs finish within the
// shutdown grace.
func RunWorker(ctx context.Context, cfg config.Config, ln net.Listener, log *slog.Logger) error {
	if err := CheckWorker(cfg); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("creating the data dir %s: %w", cfg.DataDir, err)
	}
	lock, err := lockDataDir(cfg.DataDir, "worker")
	if err != nil {
		return err
	}
	defer lock.Close()
	id := cfg.Worker()
	names, err := protocol.NewNames(cfg.NATSPrefix)
	if err != nil {
		return fmt.Errorf("setting nats-prefix (SKRIP_NATS_PREFIX): %w", err)
	}
	// Its user may read replies only under its own inbox prefix (natsserver.Permissions),
	// and it pings often, so that a cut off worker notices within seconds.
	nc, err := natsserver.Dial(cfg.NATSURL, NATSAuth(cfg), nats.Name("skrip worker "+id), nats.MaxReconnects(-1),
		nats.CustomInboxPrefix(natsserver.WorkerInboxPrefix(names, id)), nats.PingInterval(2*time.Second), nats.MaxPingsOutstanding(3))
	if err != nil {
		return err
	}
	defer nc.Close()
	work, err := natsblob.New(ctx, nc, natsblob.Config{Bucket: cfg.NATSWorkBucket, Replicas: cfg.NATSReplicas, Node: id, DropMarkers: true,
		Description: workBucketDescription, Log: log})
	if err != nil {
		return fmt.Errorf("opening the work bucket %s: %w", cfg.NATSWorkBucket, err)
	}
	defer work.Close()
	rn, err := OpenRunner(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer rn.Close()
	budget, err := WorkerBoxBudget(ctx, cfg, rn, log)
	if err != nil {
		return err
	}
	m := metrics.New()
	registerWarm(m, rn)
	conc := cfg.RunnerConcurrency
	if conc < 0 {
		conc = runtime.NumCPU()
	}
	host, _ := os.Hostname()
	w, err := worker.New(nc, work, rn, worker.Config{ID: id, Names: names, Host: host, Concurrency: conc, AckWait: cfg.RunAckWait, DataDir: cfg.DataDir,
		CacheBytes: cfg.WorkerCacheBytes, Grace: cfg.ShutdownGrace, Version: version.Version, BoxBudget: budget}, m, log)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	api.RegisterOps(mux, api.Ops{Metrics: m, Version: version.Version, Ready: []api.Check{
		{Name: "nats", Ping: func(context.Context) error {
			if !nc.IsConnected() {
				return fmt.Errorf("not connected to NATS (%s)", nc.Status())
			}
			return nil
		}},
		{Name: "runner", Ping: rn.Ping},
	}}, log)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	log.Info("skrip worker is running", "worker", id, "runner", rn.Name(), "concurrency", conc, "addr", "http://"+ln.Addr().String(),
		"version", version.Version)
	return w.Run(ctx)
}

// WorkerBoxBudget is the memory the agent sandboxes a worker keeps on rn may take
// (SandboxBudget), or 0 when rn cannot keep them with every limit enforced here: API
// nodes then place none on it.
func WorkerBoxBudget(ctx context.Context, cfg config.Config, rn runner.Engine, log *slog.Logger) (int64, error) {
	budget, err := SandboxBudget(ctx, cfg, rn)
	if err != nil {
		return 0, err
	}
	sb := SandboxConfig(cfg)
	for _, e := range rn.BoxEnforcement(sb.Limits, sb.WorkspaceBytes) {
		if e.Limit == "/workspace" && !e.OK {
			log.Warn("this worker keeps no agent sandboxes", "runner", rn.Name(), "reason", e.How)
			return 0, nil
		}
	}
	return budget, nil
}
