package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/contract"
)

// maxToolFileBytes caps a file the tools verbs read: a script, a schema, tool.json, the
// usage instructions. The server's own caps are smaller; this only keeps a wrong path
// (a large file) from being read whole.
const maxToolFileBytes = 4 << 20

func (e *env) toolsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "tools", Short: "Create, list, update, import and export tools (authors), and keep your tool settings"}
	cmd.AddCommand(e.toolsAddCmd(), e.toolsListCmd(), e.toolsShowCmd(), e.toolsPushCmd(), e.toolsEditCmd(),
		e.toolsSettingsCmd(), e.toolsImportCmd(), e.toolsExportCmd(), e.toolsMaintainersCmd())
	cmd.AddCommand(e.toolsVersionsCmd(), e.toolsDiffCmd(), e.toolsRestoreCmd())
	return cmd
}

// schemaFlags are the --input-schema and --settings-schema of the verbs that make a
// version.
type schemaFlags struct {
	input, settings string
}

func (f *schemaFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.input, "input-schema", "", "a JSON file holding the version's input_schema: the fields of the run form (docs/runner-contract.md: Input and settings schemas)")
	cmd.Flags().StringVar(&f.settings, "settings-schema", "", "a JSON file holding the version's settings_schema: the fields of each user's settings")
}

// read returns the schemas the flags name, checked here first so that a mistake names
// the file; nil for a flag not given or given empty.
func (f *schemaFlags) read() (input, settings json.RawMessage, err error) {
	if f.input != "" {
		if input, err = readSchema(f.input, "input_schema"); err != nil {
			return nil, nil, err
		}
	}
	if f.settings != "" {
		settings, err = readSchema(f.settings, "settings_schema")
	}
	return input, settings, err
}

// readSchema reads a schema file and checks it as the server will (but for the upload
// cap, which only the server knows).
func readSchema(path, what string) (json.RawMessage, error) {
	b, err := readToolFile(path)
	if err != nil {
		return nil, err
	}
	if what == "input_schema" {
		_, err = contract.ParseInputSchema(b, 0)
	} else {
		_, err = contract.ParseSettingsSchema(b)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// readToolFile reads a whole file of at most maxToolFileBytes.
func readToolFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, path)
}

// readCapped reads all of r, the file at path, refusing more than maxToolFileBytes.
func readCapped(r io.Reader, path string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxToolFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxToolFileBytes {
		return nil, fmt.Errorf("%s is larger than %s; is it the right file?", path, humanize.IBytes(maxToolFileBytes))
	}
	return b, nil
}

func (e *env) toolsAddCmd() *cobra.Command {
	var n client.NewTool
	var usageFile string
	var schemas schemaFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add FILE",
		Short: "Create a tool from a Python file that defines run_tool(input_dir, output_dir)",
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := readToolFile(args[0])
			if err != nil {
				return err
			}
			n.Source = string(src)
			if n.InputSchema, n.SettingsSchema, err = schemas.read(); err != nil {
				return err
			}
			if usageFile != "" {
				b, err := readToolFile(usageFile)
				if err != nil {
					return err
				}
				n.UsageInstructions = string(b)
			}
			if n.Title == "" {
				n.Title = n.Slug
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			t, v, err := c.AddTool(cmd.Context(), n)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"tool": t, "version": v})
			}
			state := "not published (publish with `skrip tools push " + n.Slug + " FILE --publish`)"
			if n.Publish {
				state = "published"
			}
			fmt.Fprintf(e.stdout, "created %s (%s), version %s, %s\n", t.Slug, t.ID, v.ID, state)
			return nil
		},
	}
	cmd.Flags().StringVar(&n.Slug, "slug", "", "short name used in URLs and `skrip run SLUG` (required)")
	cmd.Flags().StringVar(&n.Title, "title", "", "title shown to people (default: the slug)")
	cmd.Flags().StringVar(&n.Description, "description", "", "what the tool does")
	cmd.Flags().StringVar(&n.Summary, "summary", "", "one or two sentences for the tool list")
	cmd.Flags().StringVar(&usageFile, "usage-file", "", "a markdown file of usage instructions, shown on the tool's page")
	schemas.add(cmd)
	cmd.Flags().BoolVar(&n.Publish, "publish", false, "publish this first version")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.MarkFlagRequired("slug")
	return cmd
}

func (e *env) toolsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tools you can run (and your drafts)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			tools, err := c.Tools(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return e.printList(tools, nil)
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
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) toolsShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show SLUG",
		Short: "Show a tool: its summary, usage instructions, the inputs `skrip run` takes and its settings",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			t, err := c.ToolOf(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(t)
			}
			fmt.Fprintf(e.stdout, "%s (%s)\n", t.Title, t.Slug)
			if t.Summary != "" {
				fmt.Fprintf(e.stdout, "\n%s\n", t.Summary)
			}
			if t.UsageInstructions != "" {
				fmt.Fprintf(e.stdout, "\n%s\n", strings.TrimRight(t.UsageInstructions, "\n"))
			}
			in, _ := contract.ParseInputSchema(t.InputSchema, 0)
			switch {
			case t.PublishedVersionID == nil:
				fmt.Fprintln(e.stdout, "\nNot published yet.")
				return nil
			case in == nil:
				fmt.Fprintln(e.stdout, "\nInputs: any files, and any --input key=value.")
			default:
				fmt.Fprintln(e.stdout, "\nInputs (skrip run "+t.Slug+" [FILES...] --input NAME=VALUE):")
				w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
				for _, f := range in {
					fmt.Fprintf(w, "  %s\t%s\t%s\n", f.Name, describeField(f), f.Label)
				}
				w.Flush()
				if in.FileField() == nil {
					fmt.Fprintln(e.stdout, "  (no files)")
				}
			}
			set, _ := contract.ParseSettingsSchema(t.SettingsSchema)
			if set != nil {
				fmt.Fprintln(e.stdout, "\nSettings (skrip tools settings "+t.Slug+" --set NAME=VALUE):")
				w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
				for _, f := range set {
					fmt.Fprintf(w, "  %s\t%s\t%s\n", f.Name, describeField(contract.InputField{Field: f}), f.Label)
				}
				w.Flush()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// describeField says what a field takes: its kind, with its options or, for the file
// field, how many files of which types.
func describeField(f contract.InputField) string {
	switch {
	case f.Kind == contract.FieldFile:
		s := fmt.Sprintf("files: %d to %d", *f.Min, *f.Max)
		if len(f.Accept) > 0 {
			s += " of " + strings.Join(f.Accept, " ")
		}
		return s
	case len(f.Options) > 0:
		vals := make([]string, len(f.Options))
		for i, o := range f.Options {
			vals[i] = o.Value
		}
		return f.Kind + ": " + strings.Join(vals, ", ")
	}
	return f.Kind
}

func (e *env) toolsPushCmd() *cobra.Command {
	var publish bool
	var note string
	var schemas schemaFlags
	cmd := &cobra.Command{
		Use:   "push SLUG FILE",
		Short: "Save FILE as a new version of a tool",
		Long: "Save FILE as a new version of a tool. The version keeps the published version's input_schema and\n" +
			"settings_schema unless --input-schema or --settings-schema give others; give one empty\n" +
			"(--input-schema=) for a version without it.",
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := readToolFile(args[1])
			if err != nil {
				return err
			}
			n := client.NewVersion{Source: string(src), Note: note}
			if n.InputSchema, n.SettingsSchema, err = schemas.read(); err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			inSet, setSet := cmd.Flags().Changed("input-schema"), cmd.Flags().Changed("settings-schema")
			var kept []string
			if !inSet || !setSet {
				t, err := c.ToolOf(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if !inSet && t.InputSchema != nil {
					n.InputSchema, kept = t.InputSchema, append(kept, "input_schema")
				}
				if !setSet && t.SettingsSchema != nil {
					n.SettingsSchema, kept = t.SettingsSchema, append(kept, "settings_schema")
				}
			}
			v, err := c.AddVersion(cmd.Context(), args[0], n)
			if err != nil {
				return err
			}
			if len(kept) > 0 {
				fmt.Fprintf(e.stdout, "kept the published version's %s\n", strings.Join(kept, " and "))
			}
			if publish {
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
	schemas.add(cmd)
	cmd.Flags().BoolVar(&publish, "publish", false, "publish the new version")
	cmd.Flags().StringVar(&note, "note", "", "what changed in this version, shown in its tool's list of versions")
	return cmd
}

func (e *env) toolsEditCmd() *cobra.Command {
	var title, description, summary, usageFile string
	cmd := &cobra.Command{
		Use:   "edit SLUG",
		Short: "Change a tool's title, description, summary or usage instructions",
		RunE: func(cmd *cobra.Command, args []string) error {
			var info client.ToolInfo
			set := func(flag string, v *string, into **string) {
				if cmd.Flags().Changed(flag) {
					*into = v
				}
			}
			set("title", &title, &info.Title)
			set("description", &description, &info.Description)
			set("summary", &summary, &info.Summary)
			if usageFile != "" {
				b, err := readToolFile(usageFile)
				if err != nil {
					return err
				}
				usage := string(b)
				info.UsageInstructions = &usage
			}
			if info == (client.ToolInfo{}) {
				return usageErrorf(cmd, "nothing to change: give --title, --description, --summary or --usage-file")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			t, err := c.UpdateTool(cmd.Context(), args[0], info)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "updated %s (%s)\n", t.Slug, t.Title)
			return nil
		},
	}
	cmd.Flags().StringVar(&title, "title", "", "the new title")
	cmd.Flags().StringVar(&description, "description", "", "the new description")
	cmd.Flags().StringVar(&summary, "summary", "", "the new summary")
	cmd.Flags().StringVar(&usageFile, "usage-file", "", "a markdown file of the new usage instructions")
	return cmd
}
