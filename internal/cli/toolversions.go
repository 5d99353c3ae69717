package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
)

// `skrip tools versions`, `skrip tools diff` and `skrip tools restore` (docs/cli.md): a
// tool's versions with their notes, two of them compared, an old one restored.

func (e *env) toolsVersionsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "versions SLUG",
		Short: "List a tool's versions, newest first: number, id, note, author, whether it compiles, its latest sandbox run",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			list, err := c.ToolVersions(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(list)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "#\tID\tSAVED\tBY\tCOMPILES\tSANDBOX\tNOTE")
			for _, v := range list.Versions {
				n := strconv.Itoa(v.Number)
				if v.Published {
					n += "*"
				}
				compiles := "yes"
				if !v.Compiles {
					compiles = "no"
					if v.SyntaxLine > 0 {
						compiles = "no (line " + strconv.Itoa(v.SyntaxLine) + ")"
					}
				}
				sandbox := v.LastSandboxStatus
				if sandbox == "" {
					sandbox = "-"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, v.ID, humanize.Time(v.CreatedAt), v.CreatedByName, compiles, sandbox, v.Note)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(list.Versions) > 0 {
				fmt.Fprintln(e.stdout, "* published")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) toolsDiffCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff VERSION_ID AGAINST_ID",
		Short: "Print the unified diff of two versions of a tool (source and schemas): what changed from AGAINST_ID to VERSION_ID",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			d, err := c.DiffVersions(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(d)
			}
			_, err = fmt.Fprint(e.stdout, d.Unified)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) toolsRestoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore VERSION_ID",
		Short: "Save an old version's source and schemas as a new version of its tool (not published)",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			v, err := c.RestoreVersion(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "version %d (%s) saved: %s (not published; publish it in the editor)\n", v.Number, v.ID, v.Note)
			return nil
		},
	}
	return cmd
}
