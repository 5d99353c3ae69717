package lifecycle

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// ExportTarget resolves ref for an export by actor: the user themselves, or an admin.
func (s *Service) ExportTarget(ctx context.Context, actor account.Actor, ref string) (store.User, error) {
	return s.d.Accounts.Lookup(ctx, actor.User, ref)
}

// ExportName is the file name an export of u is offered as.
func ExportName(u store.User, now time.Time) string {
	return "skrip-" + u.Name + "-" + now.UTC().Format("20060102") + ".zip"
}

// Export writes a zip of everything held about u to w as it reads it, never holding
// more than one entry's buffer: user.json (the profile, tokens without secrets, web
// sessions, usage), settings.json, runs/<id>/run.json with each run's artifacts beside
// it, files/<key> (staged files' bytes, with files.json listing them), sessions.json,
// session-files/…, reports.json (the problem reports they made) and reviews.json (the
// versions they submitted for review, and the reviews they decided). When reading fails midway it returns the error without finishing
// the zip, so that what was written does not look like a whole archive: the caller
// breaks the connection.
func (s *Service) Export(ctx context.Context, actor account.Actor, u store.User, w io.Writer) error {
	s.d.Accounts.Audit(ctx, actor, account.AuditUserExported, u.Name, nil)
	zw := zip.NewWriter(w)
	x := exporter{s: s, zw: zw, u: u}
	for _, step := range []func(context.Context) error{x.user, x.settings, x.runs, x.files, x.sessions, x.reports, x.reviews} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return zw.Close()
}

type exporter struct {
	s  *Service
	zw *zip.Writer
	u  store.User
}

func (x *exporter) json(name string, v any) error {
	w, err := x.zw.Create(name)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// blob copies the blob key into the zip as name.
func (x *exporter) blob(ctx context.Context, name, key string) error {
	r, _, err := x.s.d.Blobs.Get(ctx, key, 0, -1)
	if err != nil {
		return fmt.Errorf("exporting %s: %w", name, err)
	}
	defer r.Close()
	w, err := x.zw.Create(name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("exporting %s: %w", name, err)
	}
	return nil
}

func (x *exporter) user(ctx context.Context) error {
	tokens, err := x.s.d.Store.UserTokens(ctx, x.u.ID)
	if err != nil {
		return err
	}
	web, err := x.s.d.Store.UserWebSessions(ctx, x.u.ID)
	if err != nil {
		return err
	}
	use, err := x.s.d.Files.Usage(ctx, x.u.ID)
	if err != nil {
		return err
	}
	return x.json("user.json", map[string]any{
		"id": x.u.ID, "name": x.u.Name, "role": x.u.Role, "state": x.u.State, "created_at": x.u.CreatedAt,
		"has_password": x.u.PasswordHash != "", "sign_on": map[string]string{"issuer": x.u.OIDCIssuer, "subject": x.u.OIDCSubject},
		"tokens": nonNil(tokens), "web_sessions": nonNil(web),
		"usage": map[string]int64{"files": use.Files, "versions": use.Versions, "uploads": use.Uploads, "runs": use.Runs,
			"session_files": use.SessionFiles, "retained": use.Retained, "total": use.Total()},
	})
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func (x *exporter) settings(ctx context.Context) error {
	rows, err := x.s.d.Store.UserSettings(ctx, x.u.ID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, map[string]any{"tool_id": r.ToolID, "scope": r.Scope, "values": json.RawMessage(r.Values)})
	}
	return x.json("settings.json", out)
}

func (x *exporter) runs(ctx context.Context) error {
	refs, err := x.s.d.Store.UserRuns(ctx, x.u.ID)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		r, err := x.s.d.Store.GetRun(ctx, ref.ID)
		if err != nil {
			return err
		}
		inputs, _ := run.InputsOf(r)
		arts, _ := run.ArtifactsOf(r)
		dir := "runs/" + r.ID + "/"
		var source any // null when the run did not fail, as the API gives it
		if r.ErrorSource != "" {
			source = r.ErrorSource
		}
		err = x.json(dir+"run.json", map[string]any{
			"id": r.ID, "tool_id": r.ToolID, "version_id": r.VersionID, "context": r.Context, "kind": r.Kind,
			"action_id": r.ActionID, "status": r.Status, "error_summary": r.ErrorSummary, "error_source": source,
			"inputs": inputs, "outputs": json.RawMessage(orJSON(r.Outputs, "[]")), "next_actions": json.RawMessage(orJSON(r.NextActions, "[]")),
			"artifacts": nonNil(arts), "input_manifest": json.RawMessage(orJSON(r.InputManifest, "{}")),
			"stdout": string(r.Stdout), "stderr": string(r.Stderr),
			"created_at": r.CreatedAt, "started_at": r.StartedAt, "finished_at": r.FinishedAt,
		})
		if err != nil {
			return err
		}
		for _, a := range arts {
			if a.Key == "" {
				continue
			}
			if err := x.blob(ctx, dir+"artifacts/"+safe(strings.TrimPrefix(a.Path, "output/")), a.Key); err != nil {
				return err
			}
		}
	}
	return nil
}

func orJSON(s, empty string) string {
	if s == "" || !json.Valid([]byte(s)) {
		return empty
	}
	return s
}

// safe keeps a name inside its folder of the zip.
func safe(name string) string {
	if p := strings.TrimPrefix(path.Clean("/"+name), "/"); p != "" {
		return p
	}
	return "_"
}

func (x *exporter) files(ctx context.Context) error {
	files, err := x.s.d.Store.OwnerFiles(ctx, x.u.ID)
	if err != nil {
		return err
	}
	list := make([]map[string]any, 0, len(files))
	for _, f := range files {
		if f.BlobKey == "" {
			continue // a claimed key whose upload has not finished
		}
		list = append(list, map[string]any{"key": f.Key, "size": f.Size, "sha256": f.Checksum, "content_type": f.ContentType,
			"original_name": f.OriginalName, "created_at": f.CreatedAt, "expires_at": f.ExpiresAt})
	}
	if err := x.json("files.json", list); err != nil {
		return err
	}
	for _, f := range files {
		if f.BlobKey == "" {
			continue
		}
		if err := x.blob(ctx, safe(f.Key), f.BlobKey); err != nil {
			return err
		}
	}
	return nil
}

func (x *exporter) sessions(ctx context.Context) error {
	sess, err := x.s.d.Store.UserSessions(ctx, x.u.ID)
	if err != nil {
		return err
	}
	list := make([]map[string]any, 0, len(sess))
	for _, ss := range sess {
		list = append(list, map[string]any{"tool_id": ss.ToolID, "context": ss.Context, "state": json.RawMessage(orJSON(ss.State, "{}")),
			"state_rev": ss.StateRev, "latest_run_id": ss.LatestRunID, "updated_at": ss.UpdatedAt})
	}
	if err := x.json("sessions.json", list); err != nil {
		return err
	}
	sets, err := x.s.d.Store.UserSessionFileSets(ctx, x.u.ID)
	if err != nil {
		return err
	}
	for _, set := range sets {
		var files []session.File
		if err := json.Unmarshal([]byte(set.Files), &files); err != nil {
			return fmt.Errorf("the session files of %s/%s: %w", set.ToolID, set.Context, err)
		}
		dir := "session-files/" + safe(set.ToolID) + "/" + safe(set.Context) + "/"
		for _, f := range files {
			if err := x.blob(ctx, dir+safe(f.Name), f.Key); err != nil {
				return err
			}
		}
	}
	return nil
}
