package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/wire"
)

func (e *env) runCmd() *cobra.Command {
	var inputs []string
	var asJSON bool
	var out string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "run SLUG [FILES...]",
		Short: "Run a tool on files and show what it returns",
		Long: "Run a published tool on the given files. Outputs are printed for people (tables aligned, markdown as\n" +
			"text, notices with their level), next actions are listed, and artifacts are downloaded into --out.\n" +
			"The exit status is 0 only when the run succeeded.",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			var schema contract.InputSchema
			if len(inputs) > 0 {
				// The tool's input_schema says which inputs are text: --input name=42 is
				// then the text "42". Without it (or when the tool cannot be read: the
				// run says why) a value is JSON when it parses.
				if t, err := c.ToolOf(cmd.Context(), args[0]); err == nil {
					schema, _ = contract.ParseInputSchema(t.InputSchema, 0)
				}
			}
			in, err := parseInputs(inputs, schema)
			if err != nil {
				return usageErrorf(cmd, "%v", err)
			}
			r, err := c.RunFiles(cmd.Context(), args[0], args[1:], in, wait)
			if err != nil {
				return err
			}
			if r, err = c.WaitRun(cmd.Context(), r); err != nil {
				return err
			}
			return e.showRun(cmd, c, r, asJSON, out)
		},
	}
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "an input value, key=value (text for the tool's text fields; otherwise JSON when it parses, else text); repeatable")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON")
	cmd.Flags().StringVar(&out, "out", "", "download the run's artifacts into this directory")
	cmd.Flags().DurationVar(&wait, "wait", 60*time.Second, "how long the server holds the request before answering")
	return cmd
}

// parseInputs turns key=value pairs into an inputs object. A value is text for a string,
// text or enum field of the schema, else JSON when it parses as JSON, else text.
func parseInputs(pairs []string, schema contract.InputSchema) (map[string]any, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := map[string]any{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--input %q must be key=value", p)
		}
		i := slices.IndexFunc(schema, func(f contract.InputField) bool { return f.Name == k })
		if i >= 0 && (schema[i].Kind == contract.FieldString || schema[i].Kind == contract.FieldText || schema[i].Kind == contract.FieldEnum) {
			out[k] = v
			continue
		}
		var parsed any
		if err := json.Unmarshal([]byte(v), &parsed); err == nil {
			out[k] = parsed
		} else {
			out[k] = v
		}
	}
	return out, nil
}

// showRun prints a finished run, downloads its artifacts into out, and returns an error
// (a non-zero exit) unless it succeeded.
func (e *env) showRun(cmd *cobra.Command, c *client.Client, r client.Run, asJSON bool, out string) error {
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		for _, a := range r.Artifacts {
			if err := e.saveArtifact(cmd, c, a, out); err != nil {
				return err
			}
		}
	}
	if asJSON {
		if err := e.printJSON(r); err != nil {
			return err
		}
	} else {
		e.printRun(r, out)
	}
	if r.Status != "succeeded" {
		msg := r.Status
		if r.ErrorSummary != nil {
			msg += ": " + *r.ErrorSummary
		}
		return exitError{code: 1, err: fmt.Errorf("run %s %s", r.RunID, msg)}
	}
	return nil
}

func (e *env) saveArtifact(cmd *cobra.Command, c *client.Client, a client.Artifact, dir string) error {
	rel := filepath.FromSlash(strings.TrimPrefix(a.Path, "output/"))
	dst := filepath.Join(dir, rel)
	if !strings.HasPrefix(dst, filepath.Clean(dir)+string(filepath.Separator)) {
		return fmt.Errorf("artifact %s points outside %s", a.Path, dir)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".skrip-artifact-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := c.DownloadArtifact(cmd.Context(), a, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	os.Chmod(tmp.Name(), 0o644)
	return os.Rename(tmp.Name(), dst)
}

// sourceNote says where a failed run's error came from, unless it is the tool's own
// message to its user, which the summary says best by itself.
func sourceNote(r client.Run) string {
	if r.ErrorSource == nil {
		return ""
	}
	switch *r.ErrorSource {
	case wire.SourceCrash:
		return " (the tool crashed: its stderr is in --json)"
	case wire.SourceRunner:
		return " (stopped by the runner)"
	case wire.SourcePolicy:
		return " (the result broke the runner contract)"
	case wire.SourceInput:
		return " (the input was refused)"
	}
	return ""
}

var tagPattern = regexp.MustCompile(`<[^>]*>`)

// printRun writes a run for people.
func (e *env) printRun(r client.Run, out string) {
	w := e.stdout
	summary := ""
	if r.ErrorSummary != nil {
		summary = ": " + *r.ErrorSummary
	}
	dur := ""
	if r.DurationMS != nil {
		dur = fmt.Sprintf(" in %.1fs", float64(*r.DurationMS)/1000)
	}
	fmt.Fprintf(w, "Run %s %s%s%s%s\n", r.RunID, r.Status, dur, sourceNote(r), summary)
	for _, o := range r.Outputs {
		fmt.Fprintln(w)
		switch o.Kind {
		case "notice":
			fmt.Fprintf(w, "[%s] %s\n", strings.ToUpper(o.Level), o.Message)
		case "markdown":
			fmt.Fprintln(w, strings.TrimRight(o.Markdown, "\n"))
		case "table":
			if o.Title != "" {
				fmt.Fprintln(w, o.Title)
			}
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			var head []string
			for _, col := range o.Columns {
				head = append(head, col.Label)
			}
			fmt.Fprintln(tw, strings.Join(head, "\t"))
			for _, row := range o.Rows {
				var cells []string
				for _, col := range o.Columns {
					cells = append(cells, cell(row[col.Key]))
				}
				fmt.Fprintln(tw, strings.Join(cells, "\t"))
			}
			tw.Flush()
		case "json":
			if o.Title != "" {
				fmt.Fprintln(w, o.Title)
			}
			b, _ := json.MarshalIndent(o.Value, "", "  ")
			fmt.Fprintln(w, string(b))
		case "html_sandboxed":
			text := strings.Join(strings.Fields(tagPattern.ReplaceAllString(o.HTML, " ")), " ")
			if len(text) > 300 {
				text = text[:300] + "…"
			}
			fmt.Fprintf(w, "[HTML preview, %d bytes; open the run in the web UI to see it] %s\n", len(o.HTML), text)
		case "vega_lite":
			fmt.Fprintln(w, "[chart: a Vega-Lite spec; open the run in the web UI to see it]")
		default:
			fmt.Fprintf(w, "[%s output]\n", o.Kind)
		}
	}
	if len(r.Artifacts) > 0 {
		fmt.Fprintln(w, "\nArtifacts:")
		for _, a := range r.Artifacts {
			where := ""
			if out != "" {
				where = " -> " + filepath.Join(out, strings.TrimPrefix(a.Path, "output/"))
			}
			fmt.Fprintf(w, "  %s (%s)%s\n", a.Path, size(a.Bytes), where)
		}
	}
	if len(r.NextActions) > 0 {
		fmt.Fprintln(w, "\nNext actions:")
		for _, a := range r.NextActions {
			var fields []string
			for _, f := range a.Fields {
				desc := f.Name + " (" + f.Kind
				if len(f.Options) > 0 {
					var opts []string
					for _, o := range f.Options {
						opts = append(opts, o.Value)
					}
					desc += ": " + strings.Join(opts, "|")
				}
				fields = append(fields, desc+")")
			}
			fmt.Fprintf(w, "  %s  %q  %s\n", a.ActionID, a.Label, strings.Join(fields, ", "))
			fmt.Fprintf(w, "    skrip action %s %s", r.RunID, a.ActionID)
			for _, f := range a.Fields {
				fmt.Fprintf(w, " --input %s=…", f.Name)
			}
			fmt.Fprintln(w)
		}
	}
}

func cell(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case float64:
		if t == float64(int64(t)) {
			return fmt.Sprint(int64(t))
		}
		return fmt.Sprint(t)
	default:
		b, _ := json.Marshal(t)
		return string(b)
	}
}
