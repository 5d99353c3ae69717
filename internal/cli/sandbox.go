package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
)

func (e *env) sandboxCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Persistent sandboxes for agents: create, exec, stage files in, publish files out",
		Long: "A sandbox keeps a /workspace between commands, has no network, and is destroyed after its idle timeout.\n" +
			"Stage staged files (skrip files upload) into it, run commands, and publish results back to the staging area.",
	}
	cmd.AddCommand(e.sandboxCreateCmd(), e.sandboxListCmd(), e.sandboxExecCmd(), e.sandboxStageCmd(), e.sandboxPublishCmd(), e.sandboxRmCmd())
	return cmd
}

func (e *env) sandboxCreateCmd() *cobra.Command {
	var idle, memory, workspace string
	var pids int
	var cpus float64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a sandbox and print its id",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			opts := client.SandboxOptions{IdleTimeout: idle}
			l := client.SandboxLimits{Pids: pids, CPUs: cpus}
			for _, b := range []struct {
				flag, value string
				dst         *int64
			}{{"--memory", memory, &l.MemoryBytes}, {"--workspace", workspace, &l.WorkspaceBytes}} {
				if b.value == "" {
					continue
				}
				if *b.dst, err = config.ParseBytes(b.value); err != nil {
					return usageErrorf(cmd, "%s %q: %v", b.flag, b.value, err)
				}
			}
			if l != (client.SandboxLimits{}) {
				opts.Limits = &l
			}
			sb, err := c.CreateSandbox(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(sb)
			}
			fmt.Fprintln(e.stdout, sb.SandboxID)
			fmt.Fprintf(e.stderr, "Created sandbox %s (%s runner, /workspace up to %s, destroyed after %s unused)\n",
				sb.SandboxID, sb.Runner, size(sb.Limits.WorkspaceBytes), sb.IdleTimeout)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&idle, "idle-timeout", "", "destroy the sandbox after this long unused (e.g. 30m); default the server's")
	f.StringVar(&memory, "memory", "", "memory limit (e.g. 512MiB); default and most the server's")
	f.StringVar(&workspace, "workspace", "", "size of /workspace (e.g. 200MiB); default and most the server's")
	f.IntVar(&pids, "pids", 0, "process limit; default and most the server's")
	f.Float64Var(&cpus, "cpus", 0, "CPUs; default and most the server's")
	f.BoolVar(&asJSON, "json", false, "print the sandbox as JSON")
	return cmd
}

func (e *env) sandboxListCmd() *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your sandboxes",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			list, err := c.Sandboxes(cmd.Context(), all)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printList(list, nil)
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stderr, "No sandboxes. Create one with `skrip sandbox create`.")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tRUNNER\tWORKSPACE\tLAST USED\tDESTROYED AT")
			for _, sb := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sb.SandboxID, sb.Runner, size(sb.Limits.WorkspaceBytes),
					sb.LastActiveAt.Local().Format(time.DateTime), sb.ExpiresAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every user's sandboxes (admin)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) sandboxExecCmd() *cobra.Command {
	var timeout time.Duration
	var stdinPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "exec [flags] ID CMD [ARG...]",
		Short: "Run a command in a sandbox; exits with the command's exit code",
		Long: "Runs CMD in /workspace of the sandbox. Its output streams as it comes when stdout is a terminal;\n" +
			"otherwise it is printed when the command ends (stdout to stdout, stderr to stderr).\n\n" +
			"As with docker exec, the flags of exec come before ID: everything after ID is the command's.\n" +
			"skrip exits with the command's exit code (127: command not found, 137: killed), or with 125\n" +
			"when skrip itself failed (the sandbox is gone, the server did not answer).",
		Annotations: map[string]string{passesExitCode: "yes"},
		RunE: func(cmd *cobra.Command, args []string) error {
			// "exec ID -- CMD": flags end at ID already, so a "--" after it is only a separator.
			if len(args) > 1 && args[1] == "--" {
				args = append(args[:1:1], args[2:]...)
			}
			if len(args) < 2 {
				return usageErrorf(cmd, "missing CMD")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			req := client.ExecRequest{Cmd: args[1:], TimeoutS: timeout.Seconds()}
			if stdinPath != "" {
				var b []byte
				if stdinPath == "-" {
					b, err = io.ReadAll(e.stdin)
				} else {
					b, err = os.ReadFile(stdinPath)
				}
				if err != nil {
					return fmt.Errorf("reading --stdin: %w", err)
				}
				s := string(b)
				req.Stdin = &s
			}
			var res client.ExecResult
			streamed := isTerminal(e.stdout) && !asJSON
			if streamed {
				res, err = c.ExecStream(cmd.Context(), args[0], req, func(stream, line string) {
					switch stream {
					case "stderr":
						io.WriteString(e.stderr, line)
					case "notice":
						fmt.Fprintf(e.stderr, "skrip: %s\n", line)
					default:
						io.WriteString(e.stdout, line)
					}
				})
			} else {
				res, err = c.Exec(cmd.Context(), args[0], req)
				if err == nil && !asJSON {
					io.WriteString(e.stdout, res.Stdout)
					io.WriteString(e.stderr, res.Stderr)
				}
			}
			if err != nil {
				return err
			}
			if asJSON {
				if err := e.printJSON(res); err != nil {
					return err
				}
			}
			for _, cut := range []struct {
				on   bool
				name string
			}{{res.StdoutTruncated, "stdout"}, {res.StderrTruncated, "stderr"}} {
				switch {
				case !cut.on || asJSON:
				case streamed:
					fmt.Fprintf(e.stderr, "skrip: %s was streamed as it came (skrip's notices say what was left out), but the exec's result keeps only its first part (the server's limit)\n", cut.name)
				default:
					fmt.Fprintf(e.stderr, "skrip: %s was cut at the server's limit; write long output to a file and publish it\n", cut.name)
				}
			}
			switch {
			case res.TimedOut:
				return exitError{code: res.ExitCode, err: fmt.Errorf("the command timed out after %s and was killed", timeout)}
			case res.OOMKilled:
				return exitError{code: res.ExitCode, err: errors.New("the command ran out of memory and was killed")}
			case res.ExitCode != 0:
				// The exit code says it; the command's stderr stays the command's.
				return exitError{code: res.ExitCode}
			}
			return nil
		},
	}
	// Arguments after ID are the command's, flags included (ls -la).
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "kill the command after this long")
	cmd.Flags().StringVar(&stdinPath, "stdin", "", "send this file (- for standard input) to the command's standard input")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func (e *env) sandboxStageCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stage ID FILE_KEY DEST",
		Short: "Copy a staged file into the sandbox's workspace (DEST is relative to /workspace)",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			st, err := c.StageFile(cmd.Context(), args[0], args[1], args[2])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(st)
			}
			fmt.Fprintf(e.stdout, "Staged %s to /workspace/%s (%s, %s)\n", args[1], st.Path, size(st.SizeBytes), st.Checksum)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) sandboxPublishCmd() *cobra.Command {
	var key, ttl string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "publish ID SOURCE",
		Short: "Copy a workspace file (relative to /workspace) to the staging area and print its key",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			p, err := c.PublishFile(cmd.Context(), args[0], args[1], key, ttl)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(p)
			}
			fmt.Fprintln(e.stdout, p.FileKey)
			fmt.Fprintf(e.stderr, "Published /workspace/%s as %s (%s, %s); download it with `skrip files download %s`\n",
				args[1], p.FileKey, size(p.SizeBytes), p.Checksum, p.FileKey)
			return nil
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "store under this key (under files/); default files/f_<ULID>")
	cmd.Flags().StringVar(&ttl, "ttl", "", "delete the published file after this long (e.g. 7d)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) sandboxRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID...",
		Aliases: []string{"delete"},
		Short:   "Destroy sandboxes and their workspaces",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			var errs []error
			for _, id := range args {
				if err := c.DeleteSandbox(cmd.Context(), id); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", id, err))
					continue
				}
				fmt.Fprintf(e.stdout, "Destroyed %s\n", id)
			}
			return errors.Join(errs...)
		},
	}
}
