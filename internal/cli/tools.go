package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
)

func (e *env) toolsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "tools", Short: "Create, list and update tools (authors)"}

	var slug, title, description string
	var publish, asJSON bool
	add := &cobra.Command{
		Use:   "add FILE",
		Short: "Create a tool from a Python file that defines run_tool(input_dir, output_dir)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			if title == "" {
				title = slug
			}
			t, v, err := c.CreateTool(cmd.Context(), slug, title, description, string(src), publish)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"tool": t, "version": v})
			}
			state := "not published (publish with `skrip tools push " + slug + " FILE --publish`)"
			if publish {
				state = "published"
			}
			fmt.Fprintf(e.stdout, "created %s (%s), version %s, %s\n", t.Slug, t.ID, v.ID, state)
			return nil
		},
	}
	add.Flags().StringVar(&slug, "slug", "", "short name used in URLs and `skrip run SLUG` (required)")
	add.Flags().StringVar(&title, "title", "", "title shown to people (default: the slug)")
	add.Flags().StringVar(&description, "description", "", "what the tool does")
	add.Flags().BoolVar(&publish, "publish", false, "publish this first version")
	add.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	add.MarkFlagRequired("slug")

	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tools you can run (and your drafts)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			tools, err := c.Tools(cmd.Context())
			if err != nil {
				return err
			}
			if listJSON {
				return e.printJSON(tools)
			}
			w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SLUG\tTITLE\tPUBLISHED\tUPDATED")
			for _, t := range tools {
				pub := "no"
				if t.PublishedVersionID != nil {
					pub = *t.PublishedVersionID
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Slug, t.Title, pub, humanize.Time(t.UpdatedAt))
			}
			return w.Flush()
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")

	var pushPublish bool
	push := &cobra.Command{
		Use:   "push SLUG FILE",
		Short: "Save FILE as a new version of a tool",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[1])
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			v, err := c.CreateVersion(cmd.Context(), args[0], string(src))
			if err != nil {
				return err
			}
			if pushPublish {
				if _, err := c.Publish(cmd.Context(), v.ID); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "version %s of %s saved and published\n", v.ID, args[0])
				return nil
			}
			fmt.Fprintf(e.stdout, "version %s of %s saved (not published; add --publish)\n", v.ID, args[0])
			return nil
		},
	}
	push.Flags().BoolVar(&pushPublish, "publish", false, "publish the new version")
	cmd.AddCommand(add, list, push)
	return cmd
}
