package web

import (
	"net/http"
	"net/url"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// reportBox is the "Rapportera till författaren" part of a failed run's page: the form,
// or, once sent, that it was.
type reportBox struct {
	Author string        // the tool's author's name, "" when deleted
	Sent   *store.Report // the report made; nil: the form is shown
	// Message, ShareFiles and Error are a refused submission's, shown again with why.
	Message    string
	ShareFiles bool
	Error      string
	MaxBytes   int
}

// reportBox is what a run's page offers for reporting rn of tool t to c: nil when the
// page offers nothing, which is for anyone but the run's owner, on an editor sandbox's
// runs, and to those who maintain the tool themselves (a report would go to them).
func (h *Handler) reportBox(r *http.Request, c *call, t store.Tool, rn store.Run) (*reportBox, error) {
	sctx, err := session.ParseContext(rn.Context)
	if err != nil {
		return nil, err
	}
	// As a maintainer of the tool, not as an admin: an admin reports a fault of
	// someone else's tool to its author as anyone does.
	asMaintainer := catalog.Maintains(store.User{ID: c.User.ID, Role: store.RoleUser}, t)
	if _, sandbox := sctx.EditorVersion(); rn.UserID != c.User.ID || sandbox || asMaintainer || !store.Terminal(rn.Status) {
		return nil, nil
	}
	sent, err := h.catalog.RunReport(r.Context(), c.User, rn)
	if err != nil {
		return nil, err
	}
	return &reportBox{Author: t.AuthorName, Sent: sent, MaxBytes: catalog.MaxReportBytes}, nil
}

// reportRun files the run's report from its page's form, and goes back to the page,
// which then says it was sent. A refused report shows the page again with the message
// as typed and why.
func (h *Handler) reportRun(w http.ResponseWriter, r *http.Request, c *call) error {
	rn, err := h.runs.Owned(r.Context(), c.User, r.PathValue("run"))
	if err != nil {
		return err
	}
	message, share := r.PostFormValue("message"), r.PostFormValue("share_files") == "1"
	_, err = h.catalog.Report(r.Context(), c.User, rn, message, share)
	if err == nil {
		redirect(w, r, "/runs/"+rn.ID+"#report")
		return nil
	}
	t, terr := h.catalog.Visible(r.Context(), c.User, rn.ToolID)
	if terr != nil {
		return err
	}
	res, rerr := h.result(r, c, t, rn)
	if rerr != nil || res.Report == nil {
		return err
	}
	res.Report.Message, res.Report.ShareFiles, res.Report.Error = message, share, h.message(r, err)
	status, _ := h.statusOf(w, err)
	title := h.langOf(r).T("run.title", "Status", h.langOf(r).Status(rn.Status), "Tool", t.Title)
	h.render(w, r, status, "run", c, map[string]any{"Title": title, "Tool": t, "Result": res})
	return nil
}

// reportRow is a problem report as the reports page lists it.
type reportRow struct {
	store.Report
	Files []run.ManifestFile // the run's input files, when the reporter shared them
}

// reportsPage lists the problem reports on the tools c maintains (an admin: all), newest
// first, a page at a time, each with a button that closes it.
func (h *Handler) reportsPage(w http.ResponseWriter, r *http.Request, c *call) error {
	cursor := r.URL.Query().Get("cursor")
	list, next, err := h.catalog.Reports(r.Context(), c.User, cursor, 50)
	if err != nil {
		return err
	}
	rows := make([]reportRow, 0, len(list))
	for _, p := range list {
		row := reportRow{Report: p}
		if p.ShareFiles {
			m, err := run.ManifestOf(store.Run{ID: p.RunID, InputManifest: p.InputManifest})
			if err != nil {
				return err
			}
			row.Files = m.Files
		}
		rows = append(rows, row)
	}
	data := map[string]any{"Title": h.langOf(r).T("reports.title"), "Reports": rows, "More": cursor != ""}
	if next != "" {
		data["Next"] = "/reports?cursor=" + url.QueryEscape(next)
	}
	h.render(w, r, http.StatusOK, "reports", c, data)
	return nil
}

// closeReport closes a report from the reports page and goes back to it.
func (h *Handler) closeReport(w http.ResponseWriter, r *http.Request, c *call) error {
	p, err := h.catalog.CloseReport(r.Context(), c.User, r.PathValue("id"))
	if err != nil {
		return err
	}
	back := "/reports"
	if cur := r.PostFormValue("cursor"); cur != "" {
		back += "?cursor=" + url.QueryEscape(cur)
	}
	redirect(w, r, back+"#report-"+p.ID)
	return nil
}
