package api

import (
	"net/http"
	"strconv"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// registerReports adds the routes of problem reports (docs/api.md "Problem reports"):
// a run's owner reports it, and the tool's maintainers list and close the reports.
func (s *Server) registerReports(m Mux) {
	m.Handle("POST /api/v1/runs/{run}/report", s.authed(s.reportRun))
	m.Handle("GET /api/v1/reports", s.authed(s.listReports))
	m.Handle("GET /api/v1/reports/{id}", s.authed(s.getReport))
	m.Handle("POST /api/v1/reports/{id}/close", s.authed(s.closeReport))
}

// reportOf is report p as the API shows it: the run's input files only when the
// reporter shared them.
func reportOf(p store.Report) (wire.Report, error) {
	out := wire.Report{ID: p.ID, RunID: p.RunID, ToolID: p.ToolID, Tool: p.ToolSlug, ToolTitle: p.ToolTitle, VersionID: p.VersionID,
		RunStatus: p.RunStatus, ErrorSummary: p.ErrorSummary, Message: p.Message, ShareFiles: p.ShareFiles, Reporter: p.UserName,
		Status: p.Status, CreatedAt: p.CreatedAt, ClosedAt: p.ClosedAt}
	if p.ShareFiles {
		m, err := run.ManifestOf(store.Run{ID: p.RunID, InputManifest: p.InputManifest})
		if err != nil {
			return wire.Report{}, err
		}
		out.InputFiles = make([]wire.ManifestFile, 0, len(m.Files))
		for _, f := range m.Files {
			out.InputFiles = append(out.InputFiles, wire.ManifestFile{Name: f.Name, Bytes: f.Bytes})
		}
	}
	return out, nil
}

func writeReport(w http.ResponseWriter, status int, p store.Report) error {
	out, err := reportOf(p)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, status, out)
	return nil
}

func (s *Server) reportRun(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body wire.NewReport
	if err := httpkit.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	rn, err := s.ownRun(r, u)
	if err != nil {
		return err
	}
	p, err := s.svc.Catalog.Report(r.Context(), u, rn, body.Message, body.ShareFiles)
	if err != nil {
		return err
	}
	return writeReport(w, http.StatusCreated, p)
}

func (s *Server) listReports(w http.ResponseWriter, r *http.Request, u store.User) error {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errs.New(catalog.ErrReportInvalid, map[string]any{"field": "limit", "value": v},
				"limit %q must be a whole number from 1 to %d", v, catalog.MaxReportPage)
		}
		limit = n
	}
	list, next, err := s.svc.Catalog.Reports(r.Context(), u, q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	out := wire.ReportList{Reports: make([]wire.Report, 0, len(list))}
	for _, p := range list {
		x, err := reportOf(p)
		if err != nil {
			return err
		}
		out.Reports = append(out.Reports, x)
	}
	out.Count = len(out.Reports)
	if next != "" {
		out.NextCursor = &next
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getReport(w http.ResponseWriter, r *http.Request, u store.User) error {
	p, err := s.svc.Catalog.MaintainedReport(r.Context(), u, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeReport(w, http.StatusOK, p)
}

func (s *Server) closeReport(w http.ResponseWriter, r *http.Request, u store.User) error {
	p, err := s.svc.Catalog.CloseReport(r.Context(), u, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeReport(w, http.StatusOK, p)
}
