package web

import "net/http"

// usageRow is one kind of bytes on the account page: its message key and its bytes.
type usageRow struct {
	Label string
	Bytes int64
}

// accountPage shows the caller what they hold in the store by kind, beside their quota:
// the numbers of GET /api/v1/me, from the same service call.
func (h *Handler) accountPage(w http.ResponseWriter, r *http.Request, c *call) error {
	u, err := h.staging.Usage(r.Context(), c.User.ID)
	if err != nil {
		return err
	}
	quota := h.staging.Limits().UserQuotaBytes
	rows := []usageRow{
		{"lists.account.files", u.Files},
		{"lists.account.versions", u.Versions},
		{"lists.account.uploads", u.Uploads},
		{"lists.account.runs", u.Runs},
		{"lists.account.session_files", u.SessionFiles},
		{"lists.account.retained", u.Retained},
	}
	h.render(w, r, http.StatusOK, "account", c, map[string]any{"Title": h.langOf(r).T("lists.account.title"),
		"Rows": rows, "Total": u.Total(), "Quota": quota, "Free": max(quota-u.Total(), 0), "Over": quota > 0 && u.Total() > quota})
	return nil
}
