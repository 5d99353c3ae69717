package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// lifecycleCmds are `skrip users disable|enable|delete|export`.
func (e *env) lifecycleCmds() []*cobra.Command {
	state := func(use, short, done string, enable bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " USER",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := e.client()
				if err != nil {
					return err
				}
				f := c.DisableUser
				if enable {
					f = c.EnableUser
				}
				u, err := f(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "%s is %s\n", u.Name, done)
				return nil
			},
		}
	}
	disable := state("disable", "Disable a user: they sign in nowhere, their runs are cancelled and their sandboxes removed", "disabled", false)
	enable := state("enable", "Let a disabled user sign in again", "enabled", true)

	var yes bool
	del := &cobra.Command{
		Use:   "delete USER",
		Short: "Delete a user and everything they hold (tools they wrote stay); asks for the name on a terminal, unless --yes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				if !isTerminal(e.stdin) {
					return usageErrorf(cmd, "deleting %s cannot be undone: pass --yes to confirm", args[0])
				}
				fmt.Fprintf(e.stderr, "Deleting %s removes their files, runs, sessions, sandboxes and tokens for good.\nType the name to confirm: ", args[0])
				answer, _ := bufio.NewReader(e.stdin).ReadString('\n')
				if strings.TrimSpace(answer) != args[0] {
					return errors.New("not deleted")
				}
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			if err := c.DeleteUser(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "deleted %s\n", args[0])
			return nil
		},
	}
	del.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask")

	var out string
	var force bool
	export := &cobra.Command{
		Use:   "export USER",
		Short: "Download a zip of everything held about a user (admin, or yourself)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			target := out
			if target == "" {
				target = "skrip-" + strings.NewReplacer("/", "_", "\\", "_").Replace(args[0]) + ".zip"
			}
			if _, err := os.Lstat(target); err == nil && !force {
				return errExists(target)
			}
			// Into a temp file beside the target, placed once whole: an export that
			// breaks off leaves nothing.
			tmp, err := os.CreateTemp(filepath.Dir(target), ".skrip-export-*")
			if err != nil {
				return fmt.Errorf("cannot write %s: %w", target, errors.Unwrap(err))
			}
			defer os.Remove(tmp.Name())
			n, err := c.ExportUser(cmd.Context(), args[0], tmp)
			if err != nil {
				tmp.Close()
				return fmt.Errorf("exporting %s: %w (nothing was written to %s)", args[0], err, target)
			}
			if err := tmp.Sync(); err != nil {
				tmp.Close()
				return err
			}
			if err := tmp.Close(); err != nil {
				return err
			}
			if err := place(tmp.Name(), target, force); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "wrote %s (%s)\n", target, size(n))
			return nil
		},
	}
	export.Flags().StringVarP(&out, "output", "o", "", "the zip file to write (default skrip-USER.zip)")
	export.Flags().BoolVarP(&force, "force", "f", false, "replace the file if it exists")
	return []*cobra.Command{disable, enable, del, export}
}

func (e *env) auditCmd() *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List admin and security events, newest first (needs an admin token)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			page, err := c.Audit(cmd.Context(), limit, "")
			if err != nil {
				return err
			}
			if asJSON {
				var next *string
				if page.Cursor != "" {
					next = &page.Cursor
				}
				return e.printList(page.Events, next)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "WHEN\tACTOR\tACTION\tTARGET\tADDRESS")
			for _, ev := range page.Events {
				actor := ev.Actor
				if actor == "" {
					actor = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", ev.At.Local().Format("2006-01-02 15:04:05"), actor, ev.Action, ev.Target, ev.Address)
			}
			return w.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "how many events (at most 1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
