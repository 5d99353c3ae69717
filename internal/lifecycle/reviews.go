package lifecycle

import (
	"context"

	"github.com/skrip-dev/skrip/internal/store"
)

// maxExportedReviews bounds reviews.json; a person submits or decides far fewer.
const maxExportedReviews = 10000

// reviews writes reviews.json: the reviews the user submitted (with their notes) or
// decided (with their comments), newest first.
func (x *exporter) reviews(ctx context.Context) error {
	list, err := x.s.d.Store.Reviews(ctx, store.ReviewFilter{UserID: x.u.ID, Limit: maxExportedReviews})
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, r := range list {
		out = append(out, map[string]any{"id": r.ID, "tool_id": r.ToolID, "tool": r.ToolSlug, "version_id": r.VersionID,
			"submitted": r.SubmittedBy == x.u.ID, "decided": r.DecidedBy == x.u.ID, "note": r.Note, "submitted_at": r.SubmittedAt,
			"status": r.Status, "decided_at": r.DecidedAt, "comment": r.Comment})
	}
	return x.json("reviews.json", out)
}
