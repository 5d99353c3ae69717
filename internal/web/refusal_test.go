package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRefusalText: a page's script gets the API's refusal told in the page's language,
// from the error's reason and details as the API sent them (JSON numbers included), and
// a body it cannot read is refused, in that language too.
func TestRefusalText(t *testing.T) {
	c, err := loadCatalogue(assets)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{text: c, lang: "sv"}
	ask := func(lang, body string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, "/refusal", strings.NewReader(body))
		r.Header.Set("Accept-Language", lang)
		w := httptest.NewRecorder()
		h.refusalText(w, r)
		var got struct{ Message string }
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatalf("%s answered %q", body, w.Body.String())
		}
		return w.Code, got.Message
	}
	tooBig := `{"status": 413, "error": {"code": "too_large", "message": "elever.csv is larger than the 10500000-byte limit",
	  "details": {"reason": "file_too_large", "file": "elever.csv", "limit_bytes": 10500000}}}`
	for _, c := range []struct {
		lang, body string
		status     int
		want       []string
	}{
		{"sv", tooBig, 200, []string{"”elever.csv”", "10,5 MB", "Inget sparades"}},
		{"en", tooBig, 200, []string{"“elever.csv”", "10.5 MB", "Nothing was kept"}},
		{"sv", `{"status": 409, "error": {"code": "conflict", "details": {"reason": "upload_limit", "limit": 5}}}`, 200, []string{"(5)", "ofärdiga uppladdningar"}},
		{"sv", `{"status": 500, "error": {"code": "internal", "details": {"request_id": "r-17"}}}`, 200, []string{"r-17", "servern"}},
		{"sv", `{"status": 418, "error": {"code": "teapot"}}`, 200, []string{"Servern svarade 418"}},
		{"sv", `not json`, 400, []string{"Begäran går inte att använda"}},
		{"sv", `{"error": {"code": "` + strings.Repeat("x", maxRefusalBody) + `"}}`, 400, []string{"Begäran går inte att använda"}},
	} {
		status, msg := ask(c.lang, c.body)
		if status != c.status {
			t.Errorf("%.60s: status %d; want %d", c.body, status, c.status)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%.60s in %s: %q lacks %q", c.body, c.lang, msg, w)
			}
		}
	}
}
