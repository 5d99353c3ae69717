package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// The CLI keeps the servers it logged in to, with their tokens, in skrip/config.yaml
// under the user's config directory, as contexts (docs/cli.md "Contexts"). A command finds
// its server and token from its flags, then SKRIP_SERVER and SKRIP_TOKEN, then the
// current context.

// defaultServer is the server of a CLI with no flag, environment or context naming one.
const defaultServer = "http://127.0.0.1:8080"

// maxTokenFile bounds what --token-file reads: a token is some 50 bytes.
const maxTokenFile = 64 << 10

// cliConfig is the config file.
type cliConfig struct {
	Current  string       `yaml:"current-context,omitempty"`
	Contexts []cliContext `yaml:"contexts"`
}

// cliContext is one server the CLI logged in to.
type cliContext struct {
	Name    string `yaml:"name"`
	Server  string `yaml:"server"`
	User    string `yaml:"user,omitempty"`
	Token   string `yaml:"token,omitempty"`
	TokenID string `yaml:"token_id,omitempty"`
}

// find returns the context named name, or nil.
func (c *cliConfig) find(name string) *cliContext {
	for i := range c.Contexts {
		if c.Contexts[i].Name == name {
			return &c.Contexts[i]
		}
	}
	return nil
}

// put adds ctx, or replaces the context of its name.
func (c *cliConfig) put(ctx cliContext) {
	if old := c.find(ctx.Name); old != nil {
		*old = ctx
		return
	}
	c.Contexts = append(c.Contexts, ctx)
}

// configPath is the config file: skrip/config.yaml under os.UserConfigDir. On Unix it is
// worked out from the command's environment, as os.UserConfigDir does from the process's
// ($XDG_CONFIG_HOME, else $HOME/.config), so that tests can run the CLI in-process.
func (e *env) configPath() (string, error) {
	switch runtime.GOOS {
	case "windows", "darwin", "ios", "plan9":
		dir, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "skrip", "config.yaml"), nil
	}
	dir := e.getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home := e.getenv("HOME")
		if home == "" {
			return "", errors.New("neither $XDG_CONFIG_HOME nor $HOME is set, so there is no config directory for skrip's contexts")
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "skrip", "config.yaml"), nil
}

// loadCLIConfig reads the config file; a missing one is an empty config.
func (e *env) loadCLIConfig() (*cliConfig, string, error) {
	path, err := e.configPath()
	if err != nil {
		return &cliConfig{}, "", err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &cliConfig{}, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("reading %s: %w", path, err)
	}
	var c cliConfig
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, path, fmt.Errorf("%s is not a skrip config file: %w", path, err)
	}
	return &c, path, nil
}

// saveCLIConfig writes c to path atomically (a temp file renamed over it), readable by
// the user only: it holds tokens.
func saveCLIConfig(c *cliConfig, path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("writing the config in %s: %w", dir, err)
	}
	defer os.Remove(f.Name()) // after the rename there is nothing by this name
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append([]byte("# skrip CLI contexts (skrip login, skrip context). It holds API tokens: keep it private.\n"), b...)); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// sameServer reports whether a and b name one server.
func sameServer(a, b string) bool {
	return strings.EqualFold(strings.TrimRight(a, "/"), strings.TrimRight(b, "/"))
}

// target is the server and token a command uses, and where they came from.
type target struct {
	server, token string
	context       string // the context they came from, "" for none
}

// resolve finds the server and token: --server, then SKRIP_SERVER, then the context
// (--context, else the current one), then the default; --token-file or --token, then
// SKRIP_TOKEN, then the context's token, which is sent only to the context's own server.
func (e *env) resolve() (target, error) {
	var t target
	serverGiven := e.flagChanged("server") || e.getenv("SKRIP_SERVER") != ""
	tokenGiven := e.tokenFile != "" || e.flagChanged("token") || e.getenv("SKRIP_TOKEN") != ""
	var ctx *cliContext
	if e.contextName != "" || !serverGiven || !tokenGiven {
		// The context is needed: a config file that can't be read matters only then.
		cfg, _, err := e.loadCLIConfig()
		if cfg == nil {
			return t, err
		}
		name := e.contextName
		if name == "" {
			name = cfg.Current
		} else if cfg.find(name) == nil {
			return t, fmt.Errorf("there is no context %q; skrip context list shows them", name)
		}
		ctx = cfg.find(name)
	}
	switch {
	case e.flagChanged("server"):
		t.server = e.server
	case e.getenv("SKRIP_SERVER") != "":
		t.server = e.getenv("SKRIP_SERVER")
	case ctx != nil:
		t.server = ctx.Server
	default:
		t.server = defaultServer
	}
	switch {
	case e.tokenFile != "":
		tok, err := e.readTokenFile(e.tokenFile)
		if err != nil {
			return t, err
		}
		t.token = tok
	case e.flagChanged("token"):
		t.token = e.token
	case e.getenv("SKRIP_TOKEN") != "":
		t.token = e.getenv("SKRIP_TOKEN")
	case ctx != nil && sameServer(ctx.Server, t.server):
		t.token, t.context = ctx.Token, ctx.Name
	}
	return t, nil
}

// flagChanged reports whether the global flag name was given on the command line.
func (e *env) flagChanged(name string) bool {
	if e.flags == nil {
		return false
	}
	f := e.flags.Lookup(name)
	return f != nil && f.Changed
}

// readTokenFile reads a token from path, or from standard input for "-", without the
// spaces and line ends around it.
func (e *env) readTokenFile(path string) (string, error) {
	var r io.Reader
	if path == "-" {
		r = e.stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("reading the token from %s: %w", path, err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("%s is larger than %d bytes: not a token", path, maxTokenFile)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("%s holds no token: it must hold one token (skr_...) and nothing else", path)
	}
	return tok, nil
}

func (e *env) contextCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "context",
		Short: "List the servers skrip login saved, and choose the current one",
		Long: "The servers skrip login saved, with their tokens, are contexts in skrip/config.yaml under your config directory " +
			"($XDG_CONFIG_HOME or ~/.config on Linux). Commands use the current context unless --server/--token or SKRIP_SERVER/SKRIP_TOKEN say otherwise.",
	}
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the contexts; * marks the current one (tokens are never printed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, path, err := e.loadCLIConfig()
			if err != nil {
				return err
			}
			if len(cfg.Contexts) == 0 {
				fmt.Fprintf(e.stdout, "no contexts in %s yet: skrip login URL makes one\n", path)
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CURRENT\tNAME\tSERVER\tUSER\tTOKEN")
			for _, ctx := range cfg.Contexts {
				mark, tok := "", "logged out"
				if ctx.Name == cfg.Current {
					mark = "*"
				}
				if ctx.Token != "" {
					tok = "saved"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, ctx.Name, ctx.Server, ctx.User, tok)
			}
			return tw.Flush()
		},
	})
	c.AddCommand(&cobra.Command{
		Use:   "use NAME",
		Short: "Make NAME the current context",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, path, err := e.loadCLIConfig()
			if err != nil {
				return err
			}
			if cfg.find(args[0]) == nil {
				var names []string
				for _, c := range cfg.Contexts {
					names = append(names, c.Name)
				}
				return fmt.Errorf("there is no context %q; there are: %s", args[0], strings.Join(names, ", "))
			}
			cfg.Current = args[0]
			if err := saveCLIConfig(cfg, path); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "now using context %s (%s)\n", args[0], cfg.find(args[0]).Server)
			return nil
		},
	})
	return c
}
