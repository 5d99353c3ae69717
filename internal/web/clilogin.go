package web

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/account"
)

// cliLoginPage is where a signed-in user approves or denies a `skrip login`: the page the
// CLI prints, /cli/login?code=XXXX-XXXX. It shows the code to compare with the terminal's,
// the machine the token will be named after and the address the login came from. Without
// a code in the address it asks for one. A browser that is not signed in goes to the
// sign-in page first and comes back here (page's next).
func (h *Handler) cliLoginPage(w http.ResponseWriter, r *http.Request, c *call) error {
	code := r.URL.Query().Get("code")
	data := map[string]any{"Title": h.langOf(r).T("cli.login.title")}
	if code == "" {
		h.render(w, r, http.StatusOK, "cli_login", c, data)
		return nil
	}
	l, err := h.accounts.PendingCLILogin(r.Context(), c.User, code)
	if err != nil {
		return h.cliLoginRefused(w, r, c, data, code, err)
	}
	data["Code"] = account.FormatUserCode(l.UserCode)
	data["Machine"] = account.MachineOf(l)
	data["Address"] = l.Address
	data["ExpiresAt"] = l.ExpiresAt
	h.render(w, r, http.StatusOK, "cli_login", c, data)
	return nil
}

// decideCLILogin approves or denies the login of the form's code.
func (h *Handler) decideCLILogin(w http.ResponseWriter, r *http.Request, c *call) error {
	code, approve := r.PostFormValue("code"), r.PostFormValue("decision") == "approve"
	data := map[string]any{"Title": h.langOf(r).T("cli.login.title")}
	err := h.accounts.DecideCLILogin(r.Context(), account.Actor{User: c.User, Address: h.front.ClientAddr(r)}, code, approve)
	if err != nil {
		return h.cliLoginRefused(w, r, c, data, code, err)
	}
	data["Done"] = "denied"
	if approve {
		data["Done"] = "approved"
	}
	h.render(w, r, http.StatusOK, "cli_login", c, data)
	return nil
}

// cliLoginRefused shows the page again with why the code was refused, and the box to
// enter one, for the errors a user can act on there; others go to the error page.
func (h *Handler) cliLoginRefused(w http.ResponseWriter, r *http.Request, c *call, data map[string]any, code string, err error) error {
	status, _ := h.statusOf(w, err)
	if status != http.StatusNotFound && status != http.StatusTooManyRequests {
		return err
	}
	data["Error"] = h.message(r, err)
	data["Typed"] = code
	h.render(w, r, status, "cli_login", c, data)
	return nil
}
