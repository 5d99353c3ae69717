package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/contract"
)

// A tool directory (docs/spec.md §5b) holds tool.json and script.py. Anything else in it (demo
// files, notes) is left alone.
const (
	toolJSONName = "tool.json"
	scriptName   = "script.py"
)

// toolJSON is tool.json, its keys in the order export writes them. description is ours,
// beside the six keys of docs/spec.md §5b, and written only when the tool has one.
type toolJSON struct {
	Slug              string          `json:"slug"`
	Title             string          `json:"title"`
	Description       *string         `json:"description,omitempty"`
	Summary           string          `json:"summary"`
	UsageInstructions string          `json:"usage_instructions"`
	InputSchema       json.RawMessage `json:"input_schema,omitempty"`
	SettingsSchema    json.RawMessage `json:"settings_schema,omitempty"`
}

// toolJSONKeys are the keys tool.json may hold, for messages.
const toolJSONKeys = "slug, title, description, summary, usage_instructions, input_schema, settings_schema"

// readDirFile reads a file of a tool directory: a regular file in it, never a symlink,
// which could make an import upload whatever it points to (a key, a password file) as
// the tool's source for everyone who runs it to see in a traceback.
func readDirFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link; a tool directory's files must be regular files in it (copy the file there instead)", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return readCapped(f, path)
}

// readToolDir reads and checks a tool directory: tool.json and script.py. Every error
// names the file, and the key when one is wrong.
func readToolDir(dir string) (toolJSON, string, error) {
	path := filepath.Join(dir, toolJSONName)
	b, err := readDirFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return toolJSON{}, "", fmt.Errorf("%s: no such file; a tool directory holds %s and %s", path, toolJSONName, scriptName)
	}
	if err != nil {
		return toolJSON{}, "", err
	}
	var t toolJSON
	if err := decodeToolJSON(b, &t); err != nil {
		return toolJSON{}, "", fmt.Errorf("%s: %w", path, err)
	}
	// The JSON decoder turns bytes that are not UTF-8 into U+FFFD, so they are looked for
	// before: sent, a title would show as "�" wherever it appears.
	if key := notUTF8Key(b); key != "" {
		return toolJSON{}, "", fmt.Errorf("%s: %s is not UTF-8 text; save tool.json as UTF-8", path, key)
	}
	switch {
	case strings.TrimSpace(t.Slug) == "":
		return toolJSON{}, "", fmt.Errorf("%s: slug is missing; give the tool a short name such as \"my-tool\"", path)
	case !catalog.ValidSlug(t.Slug):
		return toolJSON{}, "", fmt.Errorf("%s: slug %q must be %s", path, t.Slug, catalog.SlugRule)
	case strings.TrimSpace(t.Title) == "":
		return toolJSON{}, "", fmt.Errorf("%s: title is missing; give the tool a title people see", path)
	}
	t.InputSchema, t.SettingsSchema = nilIfNull(t.InputSchema), nilIfNull(t.SettingsSchema)
	if _, err := contract.ParseInputSchema(t.InputSchema, 0); err != nil {
		return toolJSON{}, "", fmt.Errorf("%s: %w", path, err)
	}
	if _, err := contract.ParseSettingsSchema(t.SettingsSchema); err != nil {
		return toolJSON{}, "", fmt.Errorf("%s: %w", path, err)
	}
	spath := filepath.Join(dir, scriptName)
	src, err := readDirFile(spath)
	if errors.Is(err, os.ErrNotExist) {
		return toolJSON{}, "", fmt.Errorf("%s: no such file; a tool directory holds %s and %s", spath, toolJSONName, scriptName)
	}
	if err != nil {
		return toolJSON{}, "", err
	}
	if len(bytes.TrimSpace(src)) == 0 {
		return toolJSON{}, "", fmt.Errorf("%s is empty; it should define run_tool(input_dir, output_dir)", spath)
	}
	if !utf8.Valid(src) {
		return toolJSON{}, "", fmt.Errorf("%s is not UTF-8 text; a script is Python source", spath)
	}
	return t, string(src), nil
}

// notUTF8Key is the key of tool.json b whose value holds bytes that are not UTF-8, or ""
// when every value is UTF-8. b is a JSON object decodeToolJSON took.
func notUTF8Key(b []byte) string {
	if utf8.Valid(b) {
		return ""
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return "a key"
	}
	for _, k := range strings.Split(toolJSONKeys, ", ") {
		if v, ok := raw[k]; ok && !utf8.Valid(v) {
			return k
		}
	}
	return "a key" // the bad bytes are in a key itself
}

// decodeToolJSON decodes tool.json strictly, saying where and which key is wrong.
func decodeToolJSON(b []byte, t *toolJSON) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(t)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			return errors.New("it holds something after its JSON object")
		}
		return nil
	}
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		// Offset counts the bytes read, the wrong one included.
		line, col := lineCol(b, syntax.Offset-1)
		return fmt.Errorf("not valid JSON at line %d, column %d: %s", line, col, syntax.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("not valid JSON: it ends in the middle of a value")
	case errors.As(err, &typ) && typ.Field != "":
		want := "a string"
		if typ.Field == "input_schema" || typ.Field == "settings_schema" {
			want = "a list of fields"
		}
		return fmt.Errorf("%s must be %s, not a JSON %s", typ.Field, want, typ.Value)
	case errors.As(err, &typ):
		return fmt.Errorf("it must be a JSON object holding %s, not a JSON %s", toolJSONKeys, typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("unknown key %s; tool.json holds %s", strings.TrimPrefix(err.Error(), "json: unknown field "), toolJSONKeys)
	}
	return err
}

// lineCol is the line and column, from 1, of the byte at offset off of b.
func lineCol(b []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	return bytes.Count(before, []byte("\n")) + 1, len(before) - bytes.LastIndexByte(before, '\n')
}

func nilIfNull(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return raw
}

func (e *env) toolsImportCmd() *cobra.Command {
	var publish bool
	var note string
	cmd := &cobra.Command{
		Use:   "import DIR",
		Short: "Create a tool, or a new version of yours, from a directory holding tool.json and script.py",
		Long: "Import a tool directory: tool.json ({slug, title, summary, usage_instructions, input_schema,\n" +
			"settings_schema}, and optionally description) and script.py. A new slug creates the tool; the slug\n" +
			"of a tool you own gets a new version with the directory's schemas, and the tool's title, summary\n" +
			"and usage instructions become the directory's. --publish publishes the version.",
		RunE: func(cmd *cobra.Command, args []string) error {
			t, src, err := readToolDir(args[0])
			if err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			state := "not published (add --publish)"
			if publish {
				state = "published"
			}
			_, err = c.ToolOf(ctx, t.Slug)
			if client.IsCode(err, "not_found") {
				n := client.NewTool{Slug: t.Slug, Title: t.Title, Summary: t.Summary, UsageInstructions: t.UsageInstructions,
					Source: src, InputSchema: t.InputSchema, SettingsSchema: t.SettingsSchema, Publish: publish}
				if t.Description != nil {
					n.Description = *t.Description
				}
				created, v, err := c.AddTool(ctx, n)
				if err != nil {
					return inToolJSON(args[0], err)
				}
				fmt.Fprintf(e.stdout, "created %s (%s), version %s, %s\n", created.Slug, created.ID, v.ID, state)
				return nil
			}
			if err != nil {
				return err
			}
			v, err := c.AddVersion(ctx, t.Slug, client.NewVersion{Source: src, InputSchema: t.InputSchema, SettingsSchema: t.SettingsSchema, Note: note})
			if err != nil {
				return inToolJSON(args[0], err)
			}
			if _, err := c.UpdateTool(ctx, t.Slug, client.ToolInfo{Title: &t.Title, Description: t.Description,
				Summary: &t.Summary, UsageInstructions: &t.UsageInstructions}); err != nil {
				return inToolJSON(args[0], fmt.Errorf("version %s was saved, but the tool's info was not: %w", v.ID, err))
			}
			if publish {
				if _, err := c.Publish(ctx, v.ID); err != nil {
					return err
				}
			}
			fmt.Fprintf(e.stdout, "updated %s: new version %s, %s\n", t.Slug, v.ID, state)
			return nil
		},
	}
	cmd.Flags().BoolVar(&publish, "publish", false, "publish the imported version")
	cmd.Flags().StringVar(&note, "note", "", "what changed, for a new version of a tool you have (shown in its list of versions)")
	return cmd
}

// inToolJSON names DIR/tool.json in a refusal about one of its keys.
func inToolJSON(dir string, err error) error {
	var ae *client.Error
	if errors.As(err, &ae) && ae.Code == "invalid_request" {
		if f, _ := ae.Details["field"].(string); slices.Contains(strings.Split(toolJSONKeys, ", "), f) {
			return fmt.Errorf("%s: %w", filepath.Join(dir, toolJSONName), err)
		}
	}
	return err
}

func (e *env) toolsExportCmd() *cobra.Command {
	var out, versionID string
	var force bool
	cmd := &cobra.Command{
		Use:   "export SLUG -o DIR",
		Short: "Write a tool's tool.json and script.py into a directory, as `skrip tools import` reads them",
		Long: "Export a tool you own: its published version (or --version ID) as DIR/script.py, and the tool's\n" +
			"title, summary, usage instructions and the version's schemas as DIR/tool.json. DIR is made when\n" +
			"missing; one that holds files is refused unless --force, which replaces only those two files.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf(cmd, "give the directory to write: -o DIR")
			}
			if err := checkExportDir(out, force); err != nil {
				return err
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			t, err := c.ToolOf(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			id := versionID
			if id == "" {
				if t.PublishedVersionID == nil {
					return fmt.Errorf("%s has no published version; export one with --version ID", t.Slug)
				}
				id = *t.PublishedVersionID
			}
			v, err := c.VersionOf(cmd.Context(), id)
			if client.IsCode(err, "not_found") && versionID == "" {
				return fmt.Errorf("only the maintainers of %s or an admin may export it: its source is theirs", t.Slug)
			}
			if err != nil {
				return err
			}
			if v.ToolID != t.ID {
				return fmt.Errorf("version %s is not a version of %s", id, t.Slug)
			}
			tj := toolJSON{Slug: t.Slug, Title: t.Title, Summary: t.Summary, UsageInstructions: t.UsageInstructions,
				InputSchema: v.InputSchema, SettingsSchema: v.SettingsSchema}
			if t.Description != "" {
				tj.Description = &t.Description
			}
			var meta bytes.Buffer
			enc := json.NewEncoder(&meta)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(tj); err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			if err := writeWhole(filepath.Join(out, scriptName), []byte(v.Source)); err != nil {
				return err
			}
			if err := writeWhole(filepath.Join(out, toolJSONName), meta.Bytes()); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "exported %s, version %s, to %s\n", t.Slug, v.ID, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "the directory to write (required)")
	cmd.Flags().StringVar(&versionID, "version", "", "export this version instead of the published one")
	cmd.Flags().BoolVar(&force, "force", false, "write into a directory that holds files, replacing its tool.json and script.py")
	return cmd
}

// checkExportDir refuses a directory that holds files, unless force, and a path that is
// not a directory.
func checkExportDir(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(entries) > 0 && !force:
		return fmt.Errorf("%s is not empty; pass --force to replace its %s and %s", dir, toolJSONName, scriptName)
	}
	return nil
}

// writeWhole writes data to path through a temporary file in the same directory and a
// rename: path holds the old content or the new, never part of it.
func writeWhole(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".skrip-export-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
