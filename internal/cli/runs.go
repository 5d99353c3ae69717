package cli

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/client"
)

// runsCmd is `skrip runs list|show|logs|watch|cancel`, after `gh run`: the caller's runs,
// one run's result and log, a running run followed live, and cancelling one.
func (e *env) runsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "List your runs, show one, follow one as it runs, or cancel it"}
	cmd.AddCommand(e.runsListCmd(), e.runsShowCmd(), e.runsLogsCmd(), e.runsWatchCmd(), e.runsCancelCmd())
	return cmd
}

func (e *env) runsListCmd() *cobra.Command {
	var q client.RunQuery
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List your runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			page, err := c.Runs(cmd.Context(), q)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printList(page.Runs, page.NextCursor)
			}
			slugs := toolSlugs(cmd.Context(), c)
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tTOOL\tKIND\tSTATUS\tCREATED\tDURATION")
			for _, r := range page.Runs {
				tool := slugs[r.ToolID]
				if tool == "" {
					tool = r.ToolID
				}
				kind := r.Kind
				if r.ActionID != nil {
					kind += " " + *r.ActionID
				}
				if strings.HasPrefix(r.Context, "sandbox:") {
					kind += " (sandbox)"
				}
				dur := "-"
				if r.DurationMS != nil {
					dur = fmt.Sprintf("%.1fs", float64(*r.DurationMS)/1000)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, tool, kind, r.Status, r.CreatedAt.Local().Format("2006-01-02 15:04:05"), dur)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if page.NextCursor != nil {
				fmt.Fprintf(e.stderr, "more: skrip runs list --cursor %s\n", *page.NextCursor)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&q.Tool, "tool", "", "only the runs of this tool (slug or id)")
	cmd.Flags().StringVar(&q.Status, "status", "", "only runs in this status: queued, running, succeeded, failed, timed_out or cancelled")
	cmd.Flags().IntVar(&q.Limit, "limit", 20, "how many runs (at most 200)")
	cmd.Flags().StringVar(&q.Cursor, "cursor", "", "the next page's cursor, as the previous page printed it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {items, next_cursor} as JSON")
	return cmd
}

// toolSlugs maps the ids of the tools the caller can see to their slugs; a list shows
// the id of a tool it cannot (one unpublished since).
func toolSlugs(ctx context.Context, c *client.Client) map[string]string {
	m := map[string]string{}
	tools, err := c.Tools(ctx)
	if err != nil {
		return m
	}
	for _, t := range tools {
		m[t.ID] = t.Slug
	}
	return m
}

func (e *env) runsShowCmd() *cobra.Command {
	var asJSON, exitStatus bool
	var out string
	cmd := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show a run: its status, outputs, artifacts and next actions",
		Long: "Show a run as `skrip run` shows it when it ends. With --out its artifacts are downloaded.\n" +
			"With --exit-status the exit status is 1 unless the run succeeded (as gh run view).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			r, err := c.GetRun(cmd.Context(), args[0], 0)
			if err != nil {
				return err
			}
			return e.endRun(cmd, c, r, asJSON, out, exitStatus)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	cmd.Flags().StringVar(&out, "out", "", "download the run's artifacts into this directory")
	cmd.Flags().BoolVar(&exitStatus, "exit-status", false, "exit 1 unless the run succeeded")
	return cmd
}

// endRun prints run r as show and watch do; a run that did not succeed is an exit
// status of 1 only with exitStatus.
func (e *env) endRun(cmd *cobra.Command, c *client.Client, r client.Run, asJSON bool, out string, exitStatus bool) error {
	err := e.showRun(cmd, c, r, asJSON, out)
	if ee := (exitError{}); !exitStatus && errors.As(err, &ee) {
		return nil
	}
	return err
}

func (e *env) runsLogsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs RUN_ID",
		Short: "Print a run's stored stdout (to stdout) and stderr (to stderr)",
		Long: "Print what the run's tool printed, as the server keeps it: the first SKRIP_RUN_LOG_BYTES of each\n" +
			"stream. A log that was cut ends with a note on stderr. Use `skrip runs watch` for a run still running.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			r, err := c.GetRun(cmd.Context(), args[0], 0)
			if err != nil {
				return err
			}
			if r.Stdout != nil {
				fmt.Fprint(e.stdout, *r.Stdout)
			}
			if r.Stderr != nil {
				fmt.Fprint(e.stderr, *r.Stderr)
			}
			for _, cut := range []struct {
				name string
				yes  bool
			}{{"stdout", r.StdoutTruncated}, {"stderr", r.StderrTruncated}} {
				if cut.yes {
					fmt.Fprintf(e.stderr, "\n[skrip: the run's %s was longer; the server kept its beginning]\n", cut.name)
				}
			}
			if !r.Done() {
				fmt.Fprintf(e.stderr, "[skrip: run %s is %s; its log is kept when it ends: skrip runs watch %s]\n", r.RunID, r.Status, r.RunID)
			}
			return nil
		},
	}
	return cmd
}

func (e *env) runsWatchCmd() *cobra.Command {
	var asJSON, exitStatus, quiet bool
	var out string
	cmd := &cobra.Command{
		Use:   "watch RUN_ID",
		Short: "Follow a run as it runs: its lines as they come, then its result",
		Long: "Follow a run's events: the tool's stdout lines go to stdout and its stderr lines to stderr as\n" +
			"they come, status changes to stderr; when the run ends it is shown as `skrip runs show` shows it.\n" +
			"With --exit-status the exit status is 1 unless the run succeeded.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			id := args[0]
			err = c.RunEvents(cmd.Context(), id, func(ev client.RunEvent) error {
				switch ev.Kind {
				case "stdout":
					if !quiet {
						fmt.Fprintln(e.stdout, ev.Data)
					}
				case "stderr":
					if !quiet {
						fmt.Fprintln(e.stderr, ev.Data)
					}
				case "status":
					fmt.Fprintf(e.stderr, "[%s] run %s: %s\n", time.Now().Format("15:04:05"), id, ev.Data)
				case "notice":
					fmt.Fprintf(e.stderr, "[skrip: %s]\n", ev.Data)
				}
				return nil
			})
			if err != nil {
				return err
			}
			// The stream ends after the final status, or early when its server went
			// away: the run's end is read either way, waiting for it if need be.
			r, err := c.GetRun(cmd.Context(), id, 0)
			if err != nil {
				return err
			}
			if r, err = c.WaitRun(cmd.Context(), r); err != nil {
				return err
			}
			if !asJSON {
				fmt.Fprintln(e.stdout)
			}
			return e.endRun(cmd, c, r, asJSON, out, exitStatus)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON when it ends (the live lines still go to stdout and stderr unless --quiet)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "leave out the tool's live lines")
	cmd.Flags().StringVar(&out, "out", "", "download the run's artifacts into this directory when it ends")
	cmd.Flags().BoolVar(&exitStatus, "exit-status", false, "exit 1 unless the run succeeded")
	return cmd
}

func (e *env) runsCancelCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Cancel a queued or running run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			r, err := c.CancelRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(r)
			}
			switch {
			case r.Status == "cancelled":
				fmt.Fprintf(e.stdout, "run %s cancelled\n", r.RunID)
			case r.Done():
				fmt.Fprintf(e.stdout, "run %s had already ended: %s\n", r.RunID, r.Status)
			default:
				fmt.Fprintf(e.stdout, "run %s is stopping (%s)\n", r.RunID, r.Status)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	return cmd
}

// printList prints a list for --json in the one shape every list has (docs/cli.md):
// {items, next_cursor}, items [] when empty and next_cursor null on the last page.
func (e *env) printList(items any, next *string) error {
	return e.printJSON(struct {
		Items      any     `json:"items"`
		NextCursor *string `json:"next_cursor"`
	}{emptyIfNil(items), next})
}

// emptyIfNil is items, or an empty list for a nil slice (JSON [] rather than null).
func emptyIfNil(items any) any {
	if v := reflect.ValueOf(items); v.Kind() == reflect.Slice && v.IsNil() {
		return []any{}
	}
	return items
}
