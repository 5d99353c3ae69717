package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
)

// toolsMaintainersCmd is `skrip tools maintainers list|add|remove`: a tool's maintainers,
// who may change it as its author does (docs/api.md "Maintainers").
func (e *env) toolsMaintainersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "maintainers", Short: "List, add and remove the maintainers of a tool (its co-authors)"}

	var asJSON bool
	list := &cobra.Command{
		Use:   "list SLUG",
		Short: "List a tool's maintainers (its author first)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			ms, err := c.Maintainers(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(ms)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tROLE\tAUTHOR\tADDED")
			for _, m := range ms {
				author := "no"
				if m.Author {
					author = "yes"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.Name, m.Role, author, humanize.Time(m.AddedAt))
			}
			return w.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	add := &cobra.Command{
		Use:   "add SLUG USER",
		Short: "Make USER (a name or an id; an author or above) a maintainer of the tool",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			m, err := c.AddMaintainer(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s maintains %s\n", m.Name, args[0])
			return nil
		},
	}

	remove := &cobra.Command{
		Use:   "remove SLUG USER",
		Short: "Remove USER from the tool's maintainers (never its author, never the last one)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			if err := c.RemoveMaintainer(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s no longer maintains %s\n", args[1], args[0])
			return nil
		},
	}
	cmd.AddCommand(list, add, remove)
	return cmd
}
