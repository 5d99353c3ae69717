package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/session"
)

func (e *env) actionCmd() *cobra.Command {
	var inputs []string
	var asJSON bool
	var out string
	cmd := &cobra.Command{
		Use:   "action RUN_ID ACTION_ID",
		Short: "Submit one of the next actions a run offered, with that run's state_rev",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			prev, err := c.GetRun(cmd.Context(), args[0], 0)
			if err != nil {
				return err
			}
			// The action's fields say which inputs are text, as a tool's input_schema does.
			var fields contract.InputSchema
			for _, a := range prev.NextActions {
				if a.ActionID == args[1] {
					for _, f := range a.Fields {
						fields = append(fields, contract.InputField{Field: contract.Field{Name: f.Name, Kind: f.Kind}})
					}
				}
			}
			in, err := parseInputs(inputs, fields)
			if err != nil {
				return usageErrorf(cmd, "%v", err)
			}
			if prev.StateRev == nil {
				return fmt.Errorf("run %s left no session revision to continue from: it offered no actions, or it did not succeed", prev.RunID)
			}
			var res client.ActionResult
			sctx, err := session.ParseContext(prev.Context)
			if err != nil {
				return err
			}
			if v, ok := sctx.EditorVersion(); ok {
				res, err = c.EditorAction(cmd.Context(), v, args[1], in, *prev.StateRev)
			} else {
				res, err = c.StartAction(cmd.Context(), prev.ToolID, prev.Context, args[1], in, *prev.StateRev)
			}
			var apiErr *client.Error
			if errors.As(err, &apiErr) && apiErr.Code == "conflict" {
				return fmt.Errorf("this session changed after run %s: it is now at revision %v, and that run left revision %d. "+
					"Another tab, window or command acted on it meanwhile. See it with `skrip session show %s`, or start over with `skrip run`",
					prev.RunID, apiErr.Details["current"], *prev.StateRev, prev.ToolID)
			}
			if err != nil {
				return err
			}
			r, err := c.WaitRun(cmd.Context(), res.Run)
			if err != nil {
				return err
			}
			return e.showRun(cmd, c, r, asJSON, out)
		},
	}
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "a form value, key=value (text for the action's text fields; otherwise JSON when it parses, else text); repeatable")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	cmd.Flags().StringVar(&out, "out", "", "download the run's artifacts into this directory")
	return cmd
}

func (e *env) sessionCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "Show your tool sessions: state and session files"}
	var sctx string
	var asJSON bool
	show := &cobra.Command{
		Use:   "show TOOL",
		Short: "Show the session's state and state_rev",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			s, err := c.SessionOf(cmd.Context(), args[0], sctx)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(s)
			}
			var state any
			json.Unmarshal(s.State, &state)
			pretty, _ := json.MarshalIndent(state, "", "  ")
			fmt.Fprintf(e.stdout, "context    %s\nstate_rev  %d\nupdated    %s\nstate\n%s\n", s.Context, s.StateRev, humanize.Time(s.UpdatedAt), pretty)
			return nil
		},
	}
	show.Flags().StringVar(&sctx, "context", "default", "session context: default, or sandbox:<version_id>")
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var fctx string
	var fJSON, clear bool
	files := &cobra.Command{
		Use:   "files TOOL",
		Short: "List the files kept for the session (or remove them with --clear)",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			if clear {
				if err := c.ClearSessionFiles(cmd.Context(), args[0], fctx); err != nil {
					return err
				}
				fmt.Fprintln(e.stdout, "session files removed")
				return nil
			}
			list, err := c.SessionFiles(cmd.Context(), args[0], fctx)
			if err != nil {
				return err
			}
			if fJSON {
				// A list like every other, with when the session's files expire.
				return e.printJSON(struct {
					Items          any        `json:"items"`
					NextCursor     *string    `json:"next_cursor"`
					ExpiresAt      *time.Time `json:"expires_at"`
					LastAccessedAt *time.Time `json:"last_accessed_at"`
				}{emptyIfNil(list.Files), nil, list.ExpiresAt, list.LastAccessedAt})
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSIZE\tSHA-256")
			for _, f := range list.Files {
				fmt.Fprintf(w, "%s\t%s\t%s\n", f.Name, size(f.Bytes), f.SHA256)
			}
			w.Flush()
			if list.ExpiresAt != nil {
				fmt.Fprintf(e.stdout, "kept until %s unless used again\n", humanize.Time(*list.ExpiresAt))
			}
			return nil
		},
	}
	files.Flags().StringVar(&fctx, "context", "default", "session context: default, or sandbox:<version_id>")
	files.Flags().BoolVar(&fJSON, "json", false, "print JSON")
	files.Flags().BoolVar(&clear, "clear", false, "remove the session's files")
	cmd.AddCommand(show, files, e.sessionBackCmd(), e.sessionContinueCmd())
	return cmd
}

// printSession prints an editor sandbox session after a change.
func (e *env) printSession(s client.Session, asJSON bool) error {
	if asJSON {
		return e.printJSON(s)
	}
	fmt.Fprintf(e.stdout, "context    %s\nstate_rev  %d\nstate      %s\n", s.Context, s.StateRev, s.State)
	return nil
}

func (e *env) sessionBackCmd() *cobra.Command {
	var expected int64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "back VERSION_ID REV",
		Short: "Make an earlier step of a version's editor sandbox session current again",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			rev, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil {
				return usageErrorf(cmd, "REV must be a step's state_rev, a whole number; got %q", args[1])
			}
			if !cmd.Flags().Changed("expected") {
				return usageErrorf(cmd, "--expected is required: the session's state_rev now (see `skrip session show TOOL --context sandbox:%s`)", args[0])
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			s, err := c.EditorGoBack(cmd.Context(), args[0], rev, expected)
			if err != nil {
				return err
			}
			return e.printSession(s, asJSON)
		},
	}
	cmd.Flags().Int64Var(&expected, "expected", 0, "the session's state_rev now; another is refused, as the session changed meanwhile")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the session as JSON")
	return cmd
}

func (e *env) sessionContinueCmd() *cobra.Command {
	var rev, expected int64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "continue VERSION_ID FROM_VERSION_ID",
		Short: "Carry the editor sandbox session of another version of the same tool over to a version",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.ContinueRequest{FromVersionID: args[1]}
			if cmd.Flags().Changed("rev") {
				req.Rev = &rev
			}
			if cmd.Flags().Changed("expected") {
				req.ExpectedStateRev = &expected
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			s, err := c.EditorContinue(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return e.printSession(s, asJSON)
		},
	}
	cmd.Flags().Int64Var(&rev, "rev", 0, "the step of FROM_VERSION_ID's session to go on from (default: where it is now)")
	cmd.Flags().Int64Var(&expected, "expected", 0, "the version's session's state_rev now (0: it has none); another is refused")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the session as JSON")
	return cmd
}
