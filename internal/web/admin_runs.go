package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// adminRunsPage is how many runs one page of the admin's list holds.
const adminRunsPage = 50

// runFilter is the admin runs page's filter form as sent: the user (a name or an id),
// the tool (a slug or an id) and the status, each empty for all.
type runFilter struct {
	User, Tool, Status string
}

// query is the filter as a URL query, with cursor (the page to show) when set: the
// "Older runs" link carries the filter along.
func (f runFilter) query(cursor string) string {
	v := url.Values{}
	for _, kv := range [][2]string{{"user", f.User}, {"tool", f.Tool}, {"status", f.Status}, {"before", cursor}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	return v.Encode()
}

// auditRow is one run as the admin's list shows it: who, which tool and version, and
// what the tool was given.
type auditRow struct {
	Run       store.Run
	UserName  string
	Tool      store.Tool // the zero Tool when it is gone
	Published bool       // the run's version is the tool's published one
	Files     []run.ManifestFile
	// ManifestErr says the stored manifest could not be read; the error is logged.
	ManifestErr bool
}

// adminRuns is the admin's audit of runs (seed 002): every user's runs, newest first,
// with who ran which tool and version, when, the status and the input manifest, filtered
// by user, tool and status. A filter the services refuse (no such user or tool, a status
// that is none) shows on the page with the table's status; a non-admin gets the error
// page.
func (h *Handler) adminRuns(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := account.RequireAdmin(c.User, "seeing every user's runs"); err != nil {
		return err
	}
	q := r.URL.Query()
	f := runFilter{User: strings.TrimSpace(q.Get("user")), Tool: strings.TrimSpace(q.Get("tool")), Status: q.Get("status")}
	users, err := h.accounts.Users(r.Context(), c.User)
	if err != nil {
		return err
	}
	tools, err := h.catalog.List(r.Context(), c.User)
	if err != nil {
		return err
	}
	view := map[string]any{"Title": h.langOf(r).T("lists.admin_runs.title"), "Filter": f, "Users": users, "Tools": tools, "Statuses": run.Statuses()}
	page, err := h.auditPage(r, c, &f, q.Get("before"))
	if err != nil {
		status, _ := h.statusOf(w, err)
		if !shownToUser(status) {
			return err
		}
		view["Error"] = h.message(r, err)
		h.render(w, r, status, "admin_runs", c, view)
		return nil
	}
	names := make(map[string]string, len(users))
	for _, u := range users {
		names[u.ID] = u.Name
	}
	byID := make(map[string]store.Tool, len(tools))
	for _, t := range tools {
		byID[t.ID] = t
	}
	rows := make([]auditRow, 0, len(page.Runs))
	for _, rn := range page.Runs {
		row := auditRow{Run: rn, UserName: names[rn.UserID], Tool: byID[rn.ToolID]}
		row.Published = row.Tool.PublishedVersionID == rn.VersionID
		m, err := run.ManifestOf(rn)
		if err != nil {
			// One damaged record does not hide the others from the audit.
			httpkit.LogInternal(r, h.log, err)
			row.ManifestErr = true
		}
		row.Files = m.Files
		rows = append(rows, row)
	}
	view["Filter"], view["Runs"], view["Filtered"] = f, rows, f != runFilter{}
	if page.NextCursor != "" {
		view["Next"] = "/admin/runs?" + f.query(page.NextCursor)
	}
	h.render(w, r, http.StatusOK, "admin_runs", c, view)
	return nil
}

// auditPage lists the page of runs f selects from cursor on. It resolves f's user and
// tool through their services, and writes back their canonical names (a user's name,
// a tool's slug), so the form shows what was matched whichever way it was named.
func (h *Handler) auditPage(r *http.Request, c *call, f *runFilter, cursor string) (run.Page, error) {
	rq := run.Query{Status: f.Status, Cursor: cursor, Limit: adminRunsPage}
	if f.User != "" {
		u, err := h.accounts.Lookup(r.Context(), c.User, f.User)
		if err != nil {
			return run.Page{}, err
		}
		rq.UserID, f.User = u.ID, u.Name
	}
	if f.Tool != "" {
		t, err := h.catalog.Visible(r.Context(), c.User, f.Tool)
		if err != nil {
			return run.Page{}, err
		}
		rq.ToolID, f.Tool = t.ID, t.Slug
	}
	return h.runs.List(r.Context(), c.User, rq)
}
