package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/contract"
)

func (e *env) toolsSettingsCmd() *cobra.Command {
	var sets []string
	var values, editor string
	var raw bool
	cmd := &cobra.Command{
		Use:   "settings [SLUG]",
		Short: "Show or change your settings for a tool",
		Long: "Show your settings for a tool: each setting its published version takes, and the value you saved.\n\n" +
			"--set NAME=VALUE changes one setting and keeps the others (an empty VALUE clears it); the value is\n" +
			"read as the setting's kind wants: text as it is, true/false for a boolean, a comma-separated list\n" +
			"(or a JSON list) for a multi_enum. --json '{...}' replaces all of them with a JSON object.\n\n" +
			"--editor VERSION_ID works on your editor settings for that version instead: the ones its sandbox\n" +
			"runs get, kept apart from the published tool's. SLUG may then be left out.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 0) == (editor == "") {
				return usageErrorf(cmd, "give a tool's SLUG, or --editor VERSION_ID for the editor's settings of a version")
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			get, put := func() (client.Settings, error) { return c.ToolSettings(cmd.Context(), args[0]) },
				func(v map[string]any) (client.Settings, error) { return c.PutToolSettings(cmd.Context(), args[0], v) }
			what := args
			if editor != "" {
				get, put = func() (client.Settings, error) { return c.EditorSettings(cmd.Context(), editor) },
					func(v map[string]any) (client.Settings, error) { return c.PutEditorSettings(cmd.Context(), editor, v) }
				what = []string{"the editor of version " + editor}
			}
			s, err := get()
			if err != nil {
				return err
			}
			if values != "" || len(sets) > 0 {
				next := s.Values
				if values != "" {
					next = nil
					if err := json.Unmarshal([]byte(values), &next); err != nil || next == nil {
						return usageErrorf(cmd, "--json must be a JSON object of settings, such as {\"signature\": \"Ada\"}")
					}
				}
				if next, err = applySets(next, sets, s.SettingsSchema); err != nil {
					return usageErrorf(cmd, "%v", err)
				}
				if s, err = put(next); err != nil {
					return err
				}
			}
			if raw {
				_, err := e.stdout.Write(s.Raw)
				return err
			}
			e.printSettings(what[0], s)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "NAME=VALUE: change one setting (an empty VALUE clears it); repeatable")
	cmd.Flags().StringVar(&values, "json", "", "replace all settings with this JSON object")
	cmd.Flags().StringVar(&editor, "editor", "", "work on your editor settings of this version instead")
	cmd.Flags().BoolVar(&raw, "raw", false, "print the API's JSON answer")
	return cmd
}

// applySets applies --set NAME=VALUE pairs to values, reading each value as its field's
// kind wants. A name the schema lacks is sent as text, for the server to refuse by name.
func applySets(values map[string]any, sets []string, schema []client.Field) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range values {
		out[k] = v
	}
	for _, p := range sets {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q must be NAME=VALUE", p)
		}
		if v == "" {
			delete(out, k)
			continue
		}
		kind := ""
		for _, f := range schema {
			if f.Name == k {
				kind = f.Kind
			}
		}
		out[k] = settingValue(kind, v)
	}
	return out, nil
}

// settingValue reads text v as a value of kind: a boolean from true/false (yes/no, 1/0,
// on/off), a list for a multi_enum, text otherwise (the server coerces numbers).
func settingValue(kind, v string) any {
	switch kind {
	case contract.FieldBoolean:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "yes", "1", "on":
			return true
		case "false", "no", "0", "off":
			return false
		}
	case contract.FieldMultiEnum:
		var list []any
		if json.Unmarshal([]byte(v), &list) == nil {
			return list
		}
		out := []any{}
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return v
}

// printSettings shows each setting of the schema with its saved value, and any saved
// value the schema no longer has.
func (e *env) printSettings(what string, s client.Settings) {
	if len(s.SettingsSchema) == 0 {
		fmt.Fprintf(e.stdout, "%s has no settings\n", what)
		return
	}
	w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKIND\tVALUE\tLABEL")
	for _, f := range s.SettingsSchema {
		val := "(not set)"
		if v, ok := s.Values[f.Name]; ok {
			val = showValue(v)
		}
		kind := f.Kind
		if len(f.Options) > 0 {
			opts := make([]string, len(f.Options))
			for i, o := range f.Options {
				opts[i] = o.Value
			}
			kind += " (" + strings.Join(opts, ", ") + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", f.Name, kind, val, f.Label)
	}
	w.Flush()
	if s.UpdatedAt != nil {
		fmt.Fprintf(e.stdout, "saved %s\n", s.UpdatedAt.Local().Format("2006-01-02 15:04:05"))
	}
}

// showValue prints a setting's value: text as it is, anything else as JSON.
func showValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
