// Package cli builds the `skrip` command line: one file per verb group. `serve` and
// `doctor` run locally with the server's settings; every other verb is a client of the
// HTTP API (--server and --token-file, or a context that `skrip login` saved).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/version"
)

// env is what a command reads from its surroundings, so tests can run the CLI in-process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	server string
	token  string
	// tokenFile and contextName are --token-file and --context; flags are the global
	// flags, to tell a flag given from its default (contexts.go, resolve).
	tokenFile   string
	contextName string
	flags       *pflag.FlagSet
}

// Main runs the CLI with args and returns the process exit code (see exit.go).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	root := e.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var (
		ue usageError
		ee exitError
	)
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "skrip: %v\n\n%s", err, ue.cmd.UsageString())
	case errors.As(err, &ee) && ee.err == nil:
	default:
		fmt.Fprintln(stderr, "skrip: "+err.Error())
	}
	if cmd != nil && cmd.Annotations[passesExitCode] != "" && !errors.As(err, &ee) {
		return exitExecFailed
	}
	return exitCode(err)
}

func (e *env) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "skrip",
		Short:         "Run people's scripts on their own files, in sandboxes",
		Long:          "skrip runs tools on uploaded files in sandboxes with no network, and gives programs a file staging area.\n\n`skrip serve` starts the server; the other verbs talk to it over HTTP.",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// `skrip --version` prints what `skrip version` does.
	root.SetVersionTemplate("skrip {{.Version}}\n")
	// Where the server and token come from is resolve's (contexts.go): a flag, then
	// SKRIP_SERVER/SKRIP_TOKEN, then the current context of skrip login.
	e.flags = root.PersistentFlags()
	root.PersistentFlags().StringVar(&e.server, "server", "", "skrip server URL (else env SKRIP_SERVER, else the current context, else "+defaultServer+")")
	root.PersistentFlags().StringVar(&e.token, "token", "", "API token; prefer --token-file, as a token on the command line shows in ps (else env SKRIP_TOKEN, else the context's)")
	root.PersistentFlags().StringVar(&e.tokenFile, "token-file", "", "read the API token from this file, or from standard input for -")
	root.PersistentFlags().StringVar(&e.contextName, "context", "", "use this context of skrip login instead of the current one")
	root.AddCommand(e.loginCmd(), e.logoutCmd(), e.contextCmd(), e.serveCmd(), e.workerCmd(), e.doctorCmd(), e.versionCmd(), e.usersCmd(), e.tokensCmd(), e.filesCmd(), e.cleanupCmd(), e.toolsCmd(), e.runCmd(), e.actionCmd(), e.sessionCmd(), e.runnerImageCmd(), e.sandboxCmd(), e.mcpCmd())
	root.AddCommand(e.auditCmd())
	root.AddCommand(e.reportsCmd())
	root.AddCommand(e.runsCmd())
	checkArgs(root)
	return root
}

// client returns an API client for the server and token that resolve finds.
func (e *env) client() (*client.Client, error) {
	t, err := e.resolve()
	if err != nil {
		return nil, err
	}
	return client.New(t.server, t.token)
}

func (e *env) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print skrip's version",
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(e.stdout, "skrip "+version.Version)
			return nil
		},
	}
}

// loadConfig resolves the server settings from cmd's flags, the environment and --config.
func (e *env) loadConfig(cmd *cobra.Command) (*config.Loaded, error) {
	return config.Load(cmd.Flags(), e.getenv)
}

// newLogger makes the server's structured logger on stderr.
func (e *env) newLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(e.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(e.stderr, opts))
}

// printJSON writes v as indented JSON.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// settingsHelp lists every setting with its env var and default, for --help.
func settingsHelp() string {
	var b strings.Builder
	b.WriteString("Settings (flag, then env, then --config file, then default):\n")
	for _, s := range config.Settings() {
		d := s.Default
		if s.Shown != "" {
			d = s.Shown
		}
		if d == "" {
			d = `""`
		}
		fmt.Fprintf(&b, "  --%-24s %-30s default %s\n", s.Name, s.Env(), d)
	}
	return b.String()
}
