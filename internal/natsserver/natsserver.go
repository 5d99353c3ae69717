// Package natsserver is how skrip reaches NATS: it runs the embedded nats-server with
// JetStream that skrip uses when no external NATS is configured (reachable only from inside
// the process), dials an external server with the operator's credentials, and reports
// JetStream state for `skrip doctor`. Buckets and streams belong to their users
// (blob/natsblob).
package natsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultReadyTimeout is how long Start waits for the server to accept connections.
const DefaultReadyTimeout = 10 * time.Second

// Server is a running embedded nats-server with JetStream enabled.
type Server struct {
	srv       *server.Server
	listening bool
}

// Option changes how Start configures the server.
type Option func(*settings)

type settings struct {
	listen       bool
	host         string
	port         int
	logger       *slog.Logger
	readyTimeout time.Duration
	maxStore     int64
}

// WithListen makes the server accept client connections on host:port (port -1: a random
// free port), without authentication. Benchmarks and tests use it to stand in for an
// external server. Without it the server has no listener at all, so no other process can
// reach it: only Connect, from inside this process, can.
func WithListen(host string, port int) Option {
	return func(s *settings) { s.listen, s.host, s.port = true, host, port }
}

// WithLogger sends the server's notices, warnings and errors to l. Without it the server
// logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) { s.logger = l }
}

// WithReadyTimeout sets how long Start waits for the server to accept connections.
func WithReadyTimeout(d time.Duration) Option {
	return func(s *settings) { s.readyTimeout = d }
}

// WithMaxStore caps JetStream file storage at n bytes. The default (0) lets the server
// pick a limit from the free disk space.
func WithMaxStore(n int64) Option {
	return func(s *settings) { s.maxStore = n }
}

// Start runs a nats-server with JetStream storing its data under dir, which it creates
// when missing, and waits until the server accepts client connections. It opens no
// network listener unless WithListen says so.
func Start(dir string, opts ...Option) (*Server, error) {
	if dir == "" {
		return nil, errors.New("natsserver: a JetStream store directory is required")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("natsserver: JetStream store directory: %w", err)
	}
	set := settings{readyTimeout: DefaultReadyTimeout}
	for _, o := range opts {
		o(&set)
	}
	sopts := &server.Options{
		ServerName:        "skrip",
		Host:              set.host,
		Port:              set.port,
		DontListen:        !set.listen,
		JetStream:         true,
		StoreDir:          dir,
		JetStreamMaxStore: set.maxStore,
		NoSigs:            true,
		NoLog:             set.logger == nil,
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("natsserver: configure: %w", err)
	}
	if set.logger != nil {
		srv.SetLoggerV2(slogAdapter{set.logger}, false, false, false)
	}
	srv.Start()
	if !srv.ReadyForConnections(set.readyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("natsserver: server with store %s was not ready for connections within %s",
			dir, set.readyTimeout)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("natsserver: JetStream did not start (store %s)", dir)
	}
	return &Server{srv: srv, listening: set.listen}, nil
}

// ClientURL is the nats:// URL clients connect to, or "" when the server has no listener
// (the default; see WithListen).
func (s *Server) ClientURL() string {
	if !s.listening {
		return ""
	}
	return s.srv.ClientURL()
}

// Connect opens a client connection to the server through an in-process pipe, so no TCP
// socket is used. The caller closes the connection.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(s.srv), nats.Name("skrip")}, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("natsserver: connect in-process: %w", err)
	}
	return nc, nil
}

// Shutdown stops the server and waits until it has flushed JetStream and exited.
func (s *Server) Shutdown() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

// JetStreamState summarises the account's JetStream usage in one line for `skrip doctor`,
// for example "streams=1 consumers=0 storage=1.2 MiB memory=0 B api_requests=12
// api_errors=0".
func JetStreamState(ctx context.Context, js jetstream.JetStream) (string, error) {
	ai, err := js.AccountInfo(ctx)
	if err != nil {
		return "", fmt.Errorf("natsserver: JetStream account info: %w", err)
	}
	return fmt.Sprintf("streams=%d consumers=%d storage=%s memory=%s api_requests=%d api_errors=%d",
		ai.Streams, ai.Consumers, formatBytes(ai.Store), formatBytes(ai.Memory), ai.API.Total, ai.API.Errors), nil
}

func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
