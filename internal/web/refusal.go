package web

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/skrip-dev/skrip/internal/httpkit"
)

// maxRefusalBody caps what a page sends to have a refusal told in its language: an API
// error object is a few hundred bytes.
const maxRefusalBody = 16 << 10

// refusalText tells a page's script, in the page's language, what a refusal of the JSON
// API means: the script sends the API's error object ({"error": {code, message,
// details}}) and gets {"message": sentence} back, the sentence chosen from the error's
// reason and filled from its details as the pages themselves do (Handler.message). So
// the files page, whose uploads go to the API, never shows the API's English on a
// Swedish page.
func (h *Handler) refusalText(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
		Status int `json:"status"`
	}
	l := h.langOf(r)
	b, err := io.ReadAll(io.LimitReader(r.Body, maxRefusalBody+1))
	if err != nil || len(b) > maxRefusalBody || json.Unmarshal(b, &body) != nil {
		httpkit.WriteJSON(w, http.StatusBadRequest, map[string]string{"message": l.T("error.invalid_request")})
		return
	}
	e := body.Error
	reason, _ := e.Details["reason"].(string)
	if reason == "" {
		reason = e.Code
	}
	msg, ok := l.refusal(reason, e.Details)
	switch {
	case e.Code == "internal":
		id, _ := e.Details["request_id"].(string)
		msg = l.T("error.internal", "RequestID", id)
	case !ok:
		msg = l.T("error.unexplained", "Status", body.Status)
	}
	httpkit.WriteJSON(w, http.StatusOK, map[string]string{"message": msg})
}
