package web

import "net/http"

// usageRow is one kind of bytes on the account page: its message key and its bytes.
type usageRow struct {
	Label string
	Bytes int64
}

// accountPage shows the caller what they hold in the store by kind, beside their quota
// (the numbers of GET /api/v1/me, from the same service call), their API tokens and
// their signed-in browsers.
func (h *Handler) accountPage(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.showAccount(w, r, c, http.StatusOK, nil)
}

// showAccount renders the account page with status and extra data (a new token to show
// once, a form's error).
func (h *Handler) showAccount(w http.ResponseWriter, r *http.Request, c *call, status int, extra map[string]any) error {
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
	data := map[string]any{"Title": h.langOf(r).T("lists.account.title"),
		"Rows": rows, "Total": u.Total(), "Quota": quota, "Free": max(quota-u.Total(), 0), "Over": quota > 0 && u.Total() > quota}
	if err := h.accountData(r, c, data); err != nil {
		return err
	}
	for k, v := range extra {
		data[k] = v
	}
	h.render(w, r, status, "account", c, data)
	return nil
}
