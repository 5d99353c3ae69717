package web

import "net/http"

// registerLifecycle adds the admin's lifecycle pages and the invitation page.
func (h *Handler) registerLifecycle(mux *http.ServeMux) {}
