package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// reportsCmd is `skrip reports send|list|close`: problem reports of runs, which reach
// the tools' maintainers (docs/api.md "Problem reports").
func (e *env) reportsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "reports", Short: "Report a failed run to its tool's author, and read and close the reports on your tools"}

	var message string
	var share bool
	send := &cobra.Command{
		Use:   "send RUN_ID",
		Short: "Report one of your runs to its tool's maintainers (your files only with --share-files)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			p, err := c.ReportRun(cmd.Context(), args[0], message, share)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "reported %s to the maintainers of %s (report %s)\n", p.RunID, p.Tool, p.ID)
			return nil
		},
	}
	send.Flags().StringVarP(&message, "message", "m", "", "what happened (at most 4000 bytes)")
	send.Flags().BoolVar(&share, "share-files", false, "let the maintainers see the names and sizes of the run's input files")

	var limit int
	var cursor string
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the problem reports on the tools you maintain (an admin: all), newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			page, err := c.Reports(cmd.Context(), limit, cursor)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printList(page.Reports, page.NextCursor)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tWHEN\tTOOL\tFROM\tSTATUS\tFILES\tMESSAGE")
			for _, p := range page.Reports {
				files := "-"
				if p.ShareFiles {
					files = fmt.Sprint(len(p.InputFiles))
				}
				msg := strings.Join(strings.Fields(p.Message), " ")
				if len(msg) > 60 {
					msg = strings.ToValidUTF8(msg[:60], "") + "…"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.CreatedAt.Local().Format("2006-01-02 15:04"), p.Tool, p.Reporter, p.Status, files, msg)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if page.NextCursor != nil {
				fmt.Fprintf(e.stderr, "more: skrip reports list --cursor %s\n", *page.NextCursor)
			}
			return nil
		},
	}
	list.Flags().IntVar(&limit, "limit", 50, "how many reports (at most 200)")
	list.Flags().StringVar(&cursor, "cursor", "", "the next page's cursor, as the previous page printed it")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON, with each report's error summary and shared file names")

	closeCmd := &cobra.Command{
		Use:   "close REPORT_ID",
		Short: "Close a problem report on a tool you maintain",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			p, err := c.CloseReport(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "report %s is %s\n", p.ID, p.Status)
			return nil
		},
	}
	cmd.AddCommand(send, list, closeCmd)
	return cmd
}
