package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/wire"
)

// loginCmd is `skrip login [URL]`, as `gh auth login` does it: the server gives a short
// code and a page; the user approves there in a signed-in browser while the CLI polls;
// the CLI then gets a token named after this machine and saves it as a context.
func (e *env) loginCmd() *cobra.Command {
	var noBrowser bool
	cmd := &cobra.Command{
		Use:   "login [URL]",
		Short: "Log in to a skrip server through the browser and save it as the current context",
		Long: "skrip login prints a code and opens (or prints) a page on the server. Sign in there, check that the page shows the same code, " +
			"and approve: the CLI then receives an API token named after this computer and saves the server and the token as a context " +
			"(named after the server's host, or --context), which becomes the current one.",
		RunE: func(cmd *cobra.Command, args []string) error {
			server, err := e.loginServer(args)
			if err != nil {
				return err
			}
			return e.login(cmd.Context(), server, !noBrowser)
		},
	}
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the page's address; do not try to open a browser")
	return cmd
}

// loginServer is the server to log in to: the URL given, else --server, SKRIP_SERVER,
// the context's, or the default.
func (e *env) loginServer(args []string) (string, error) {
	if len(args) == 1 {
		s := args[0]
		if !strings.Contains(s, "://") {
			s = "https://" + s
		}
		return strings.TrimRight(s, "/"), nil
	}
	if cfg, _, err := e.loadCLIConfig(); err == nil && cfg.find(e.contextName) == nil {
		// --context names the context to make, not one to read.
		defer func(name string) { e.contextName = name }(e.contextName)
		e.contextName = ""
	}
	t, err := e.resolve()
	return t.server, err
}

func (e *env) login(ctx context.Context, server string, browser bool) error {
	c, err := client.New(server, "")
	if err != nil {
		return err
	}
	machine, _ := os.Hostname()
	var start wire.CLILoginStart
	if err := c.Do(ctx, http.MethodPost, "/api/v1/cli/logins", wire.CLILoginRequest{Machine: machine}, &start); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "Your one-time code: %s\nOpen this page, sign in and approve the code:\n  %s\n", start.UserCode, start.VerificationURL)
	if browser && pageOnServer(server, start.VerificationURL) && e.openBrowser(start.VerificationURL) {
		fmt.Fprintln(e.stderr, "(a browser was opened; if none appears, open the address yourself)")
	}
	fmt.Fprintln(e.stderr, "Waiting for the approval...")
	tok, err := pollLogin(ctx, c, start)
	if err != nil {
		return err
	}

	cfg, path, err := e.loadCLIConfig()
	if err != nil {
		return fmt.Errorf("logged in, but the token could not be saved: %w", err)
	}
	name := e.contextName
	if name == "" {
		u, _ := url.Parse(server)
		name = u.Host
	}
	var replaced *cliContext
	if old := cfg.find(name); old != nil && old.Token != "" && sameServer(old.Server, server) {
		o := *old
		replaced = &o
	}
	cfg.put(cliContext{Name: name, Server: server, User: tok.User.Name, Token: tok.Token, TokenID: tok.ID})
	cfg.Current = name
	if err := saveCLIConfig(cfg, path); err != nil {
		return fmt.Errorf("logged in, but the token could not be saved: %w", err)
	}
	if replaced != nil {
		// The token this login replaced would stay valid, unseen: revoke it, if the
		// server can. It is gone from the file either way.
		if old, err := client.New(replaced.Server, replaced.Token); err == nil &&
			old.Do(ctx, http.MethodDelete, "/api/v1/tokens/current", nil, nil) == nil {
			fmt.Fprintf(e.stderr, "The context's previous token (%s) is revoked.\n", replaced.TokenID)
		}
	}
	fmt.Fprintf(e.stdout, "Logged in to %s as %s; the token %q is saved in %s as context %s, now the current one.\n",
		server, tok.User.Name, tok.Name, path, name)
	return nil
}

// pollLogin asks for the login's token every interval until the user decides or the
// login expires.
func pollLogin(ctx context.Context, c *client.Client, start wire.CLILoginStart) (wire.CLILoginToken, error) {
	interval := time.Duration(max(start.Interval, 1)) * time.Second
	deadline := time.Now().Add(time.Duration(start.ExpiresIn)*time.Second + interval)
	for {
		select {
		case <-ctx.Done():
			return wire.CLILoginToken{}, ctx.Err()
		case <-time.After(interval):
		}
		var tok wire.CLILoginToken
		err := c.Do(ctx, http.MethodPost, "/api/v1/cli/logins/token", wire.CLILoginPoll{DeviceCode: start.DeviceCode}, &tok)
		var apiErr *client.Error
		switch {
		case err == nil:
			return tok, nil
		case errors.As(err, &apiErr) && apiErr.Details["reason"] == "authorization_pending":
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests:
			interval += time.Second // asked to slow down
		case errors.As(err, &apiErr) && apiErr.Details["reason"] == "login_denied":
			return tok, errors.New("the login was denied in the browser; nothing was saved")
		case errors.As(err, &apiErr) && apiErr.Details["reason"] == "login_expired":
			return tok, errors.New("the login expired before it was approved; run skrip login again")
		default:
			return tok, err
		}
		if time.Now().After(deadline) {
			return tok, errors.New("the login expired before it was approved; run skrip login again")
		}
	}
}

// pageOnServer reports whether page is an http(s) address on server's host, the only kind
// the CLI hands to a browser opener: an address the server sent could otherwise be any
// command line an opener accepts. (A server behind a proxy may name its public host; then
// the user opens the page printed.)
func pageOnServer(server, page string) bool {
	s, err1 := url.Parse(server)
	p, err2 := url.Parse(page)
	return err1 == nil && err2 == nil && (p.Scheme == "http" || p.Scheme == "https") &&
		p.Hostname() != "" && strings.EqualFold(p.Hostname(), s.Hostname())
}

// openBrowser tries to open u in a browser: $BROWSER when set, else the desktop's opener
// when there is a display. It never fails the login: it reports whether it started one.
func (e *env) openBrowser(u string) bool {
	var cmd *exec.Cmd
	switch b := e.getenv("BROWSER"); {
	case b != "":
		cmd = exec.Command(b, u)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", u)
	case runtime.GOOS == "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	case e.getenv("DISPLAY") != "" || e.getenv("WAYLAND_DISPLAY") != "":
		cmd = exec.Command("xdg-open", u)
	default:
		return false
	}
	if cmd.Start() != nil {
		return false
	}
	go cmd.Wait() // reap it; what the opener says does not matter
	return true
}

// logoutCmd is `skrip logout`: revoke the context's token on its server and forget it.
func (e *env) logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Revoke the current context's token on its server and remove it from the config (--context for another)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, path, err := e.loadCLIConfig()
			if err != nil {
				return err
			}
			name := e.contextName
			if name == "" {
				name = cfg.Current
			}
			ctx := cfg.find(name)
			if ctx == nil {
				return errors.New("there is no current context to log out of; skrip context list shows the contexts")
			}
			if ctx.Token == "" {
				fmt.Fprintf(e.stdout, "context %s (%s) is logged out already\n", ctx.Name, ctx.Server)
				return nil
			}
			c, err := client.New(ctx.Server, ctx.Token)
			if err != nil {
				return err
			}
			err = c.Do(cmd.Context(), http.MethodDelete, "/api/v1/tokens/current", nil, nil)
			var apiErr *client.Error
			switch {
			case err == nil:
			case errors.As(err, &apiErr) && apiErr.Status == http.StatusUnauthorized:
				// Revoked already (or expired): there is nothing left to revoke.
			case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound:
				return fmt.Errorf("%s cannot revoke tokens (it answered 404 to DELETE /api/v1/tokens/current; an older skrip?): the token stays in %s; revoke it on the server's web pages", ctx.Server, path)
			default:
				return fmt.Errorf("the token could not be revoked, so it stays in %s: %w", path, err)
			}
			ctx.Token, ctx.TokenID = "", ""
			if err := saveCLIConfig(cfg, path); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "logged out of %s (context %s): the token is revoked and removed\n", ctx.Server, ctx.Name)
			return nil
		},
	}
}
