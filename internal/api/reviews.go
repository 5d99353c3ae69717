package api

import (
	"net/http"
	"strconv"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// registerReviews adds the routes of review before publishing (docs/api.md "Review
// before publishing"): an author submits a version, reviewers and admins list the
// queue and decide.
func (s *Server) registerReviews(m Mux) {
	m.Handle("POST /api/v1/tool-versions/{version}/submit", s.authed(s.submitVersion))
	m.Handle("GET /api/v1/reviews", s.authed(s.listReviews))
	m.Handle("GET /api/v1/reviews/{id}", s.authed(s.getReview))
	m.Handle("POST /api/v1/reviews/{id}/approve", s.authed(s.approveReview))
	m.Handle("POST /api/v1/reviews/{id}/request-changes", s.authed(s.requestChanges))
	m.Handle("GET /api/v1/tools/{tool}/reviews", s.authed(s.toolReviews))
}

// reviewOf is review v as the API shows it.
func reviewOf(v store.Review) wire.Review {
	out := wire.Review{ID: v.ID, ToolID: v.ToolID, Tool: v.ToolSlug, ToolTitle: v.ToolTitle, VersionID: v.VersionID, Author: v.SubmitterName,
		Note: v.Note, SubmittedAt: v.SubmittedAt, Status: v.Status, DecidedAt: v.DecidedAt, Comment: v.Comment}
	if v.PublishedVersionID != "" {
		out.PublishedVersionID = &v.PublishedVersionID
	}
	if v.DecidedBy != "" {
		out.DecidedBy = &v.DeciderName
	}
	return out
}

func reviewList(list []store.Review, next string) wire.ReviewList {
	out := wire.ReviewList{Reviews: make([]wire.Review, 0, len(list))}
	for _, v := range list {
		out.Reviews = append(out.Reviews, reviewOf(v))
	}
	out.Count = len(out.Reviews)
	if next != "" {
		out.NextCursor = &next
	}
	return out
}

func (s *Server) submitVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body wire.NewSubmission
	if err := httpkit.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	v, err := s.svc.Catalog.Submit(r.Context(), u, s.ops.Front.ClientAddr(r), r.PathValue("version"), body.Note)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, reviewOf(v))
	return nil
}

func (s *Server) listReviews(w http.ResponseWriter, r *http.Request, u store.User) error {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errs.New(catalog.ErrReviewInvalid, map[string]any{"field": "limit", "value": v},
				"limit %q must be a whole number from 1 to %d", v, catalog.MaxReviewPage)
		}
		limit = n
	}
	list, next, err := s.svc.Catalog.Queue(r.Context(), u, q.Get("status"), q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, reviewList(list, next))
	return nil
}

func (s *Server) getReview(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, err := s.svc.Catalog.Review(r.Context(), u, r.PathValue("id"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, reviewOf(v))
	return nil
}

func (s *Server) approveReview(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, err := s.svc.Catalog.Approve(r.Context(), u, s.ops.Front.ClientAddr(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, reviewOf(v))
	return nil
}

func (s *Server) requestChanges(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body wire.ChangeRequest
	if err := httpkit.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	v, err := s.svc.Catalog.RequestChanges(r.Context(), u, s.ops.Front.ClientAddr(r), r.PathValue("id"), body.Comment)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, reviewOf(v))
	return nil
}

func (s *Server) toolReviews(w http.ResponseWriter, r *http.Request, u store.User) error {
	list, err := s.svc.Catalog.ToolReviews(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, reviewList(list, ""))
	return nil
}
