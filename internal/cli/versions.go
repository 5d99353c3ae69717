package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
)

// `skrip files versions` (docs/cli.md): the versions of a file the server keeps
// (SKRIP_FILES_VERSIONS); `skrip files download KEY --version ID` fetches one.

func (e *env) filesVersionsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "versions KEY",
		Short: "List a file's versions: the current one, then the previous ones the server keeps, newest first",
		Long: "Lists a file's versions. The server keeps previous versions when SKRIP_FILES_VERSIONS is above 0;\n" +
			"download one with `skrip files download KEY --version ID`.",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.filesClient(cmd)
			if err != nil {
				return err
			}
			list, err := c.FileVersions(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printList(list, nil)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "VERSION\tSIZE\tNAME\tCREATED\tREPLACED")
			for _, v := range list {
				replaced := "current"
				if v.ReplacedAt != nil {
					replaced = humanize.Time(*v.ReplacedAt)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", v.VersionID, size(v.SizeBytes), v.Name, humanize.Time(v.CreatedAt), replaced)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
