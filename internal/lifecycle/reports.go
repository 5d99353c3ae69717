package lifecycle

import "context"

// reports writes reports.json: the problem reports the user made, with what they said
// and whether they shared their files. Reports on the tools they maintain are the
// reporters' and stay out.
func (x *exporter) reports(ctx context.Context) error {
	list, err := x.s.d.Store.UserReports(ctx, x.u.ID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, p := range list {
		out = append(out, map[string]any{"id": p.ID, "run_id": p.RunID, "tool_id": p.ToolID, "tool": p.ToolSlug, "version_id": p.VersionID,
			"message": p.Message, "share_files": p.ShareFiles, "status": p.Status, "created_at": p.CreatedAt, "closed_at": p.ClosedAt})
	}
	return x.json("reports.json", out)
}
