package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// A version keeps its schemas (NULL stays nil), a tool its summary and instructions, and
// each user has one set of settings per tool and scope, replaced whole by PutSettings.
func TestToolSchemasAndSettings(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond).UTC()
		for _, u := range []User{newUser("u_1", "ada", RoleAuthor), newUser("u_2", "bob", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		tool := Tool{ID: "t_1", Slug: "grupper", Title: "Grupper", Summary: "Delar in en klass.", UsageInstructions: "# Så här\n", AuthorID: "u_1", CreatedAt: now, UpdatedAt: now}
		v1 := ToolVersion{ID: "v_1", ToolID: "t_1", Source: "x", Entrypoint: "run_tool", InputSchema: json.RawMessage(`[{"name":"n","label":"N","kind":"integer"}]`),
			SettingsSchema: json.RawMessage(`[{"name":"s","label":"S","kind":"string"}]`), CreatedBy: "u_1", CreatedAt: now}
		if _, err := s.CreateTool(ctx, tool, v1, true); err != nil {
			t.Fatal(err)
		}
		v2 := ToolVersion{ID: "v_2", ToolID: "t_1", Source: "y", Entrypoint: "run_tool", CreatedBy: "u_1", CreatedAt: now.Add(time.Second)}
		if err := s.CreateVersion(ctx, v2); err != nil {
			t.Fatal(err)
		}
		got, err := s.Tool(ctx, "grupper")
		if err != nil || got.Summary != tool.Summary || got.UsageInstructions != tool.UsageInstructions {
			t.Fatalf("Tool = %+v, %v", got, err)
		}
		gv1, err := s.ToolVersion(ctx, "v_1")
		if err != nil || string(gv1.InputSchema) != string(v1.InputSchema) || string(gv1.SettingsSchema) != string(v1.SettingsSchema) {
			t.Fatalf("v_1 = %+v, %v", gv1, err)
		}
		gv2, err := s.ToolVersion(ctx, "v_2")
		if err != nil || gv2.InputSchema != nil || gv2.SettingsSchema != nil {
			t.Fatalf("v_2 without schemas = %+v, %v", gv2, err)
		}
		tool.Summary, tool.UsageInstructions = "Ny.", "Nya instruktioner."
		if err := s.UpdateToolInfo(ctx, tool, now); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Tool(ctx, "t_1"); got.Summary != "Ny." || got.UsageInstructions != "Nya instruktioner." {
			t.Fatalf("after UpdateToolInfo: %+v", got)
		}

		if _, err := s.Settings(ctx, "u_2", "t_1", ""); !errors.Is(err, ErrNotFound) {
			t.Fatalf("no settings yet: err = %v, want ErrNotFound", err)
		}
		put := func(user, scope, vals string, at time.Time) {
			t.Helper()
			if err := s.PutSettings(ctx, ToolSettings{UserID: user, ToolID: "t_1", Scope: scope, Values: json.RawMessage(vals), UpdatedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		put("u_2", "", `{"s":"a"}`, now)
		put("u_2", "", `{"s":"b"}`, now.Add(time.Minute))
		put("u_2", "sandbox:v_1", `{"s":"editor"}`, now)
		put("u_1", "", `{"s":"ada"}`, now)
		for _, c := range []struct{ user, scope, want string }{{"u_2", "", `{"s":"b"}`}, {"u_2", "sandbox:v_1", `{"s":"editor"}`}, {"u_1", "", `{"s":"ada"}`}} {
			ts, err := s.Settings(ctx, c.user, "t_1", c.scope)
			if err != nil || string(ts.Values) != c.want {
				t.Fatalf("Settings(%s, %q) = %s, %v; want %s", c.user, c.scope, ts.Values, err, c.want)
			}
		}
		if ts, _ := s.Settings(ctx, "u_2", "t_1", ""); !ts.UpdatedAt.Equal(now.Add(time.Minute)) {
			t.Fatalf("updated_at = %v, want %v", ts.UpdatedAt, now.Add(time.Minute))
		}
	})
}
