package api_test

import (
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// goErrorWords are words of Go's own error texts that a client must never see: they name
// Go's packages and types, not the request.
var goErrorWords = []string{"json:", "mime:", "multipart:", "strconv", "Go value", "Go struct", "unmarshal", "float64", "int64", "invalid character"}

// TestNoGoErrorText sends bodies the decoders refuse to the real server's routes: JSON with
// numbers out of range, wrong types, cut short, with data after it, and multipart bodies
// and content types with bad parameters. Each is a 4xx whose message is a sentence of
// ours, naming the field where there is one, with no Go error text.
func TestNoGoErrorText(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	publish(t, env, "echo", echoTool)
	_, u := env.User(t, "u", "user")
	const mp = "multipart/form-data; boundary=B"
	inputsBody := func(inputs string) string {
		return "--B\r\nContent-Disposition: form-data; name=\"inputs\"\r\n\r\n" + inputs + "\r\n--B--\r\n"
	}
	tests := []struct {
		name, method, path, token, ctype, body string
		want                                   string // in the message
	}{
		{"float overflow", "POST", "/api/v1/sandboxes", u.Token, "application/json", `{"limits": {"cpus": 1e400}}`, `"limits.cpus" must be a number no larger than 1.8e308`},
		{"int overflow", "POST", "/api/v1/sandboxes", u.Token, "application/json", `{"limits": {"pids": 1e30}}`, `"limits.pids" must be a whole number from`},
		{"fraction for an int", "POST", "/api/v1/sandboxes", u.Token, "application/json", `{"limits": {"memory_bytes": 1.5}}`, "the number 1.5"},
		{"string for a number", "POST", "/api/v1/sandboxes", u.Token, "application/json", `{"limits": {"cpus": "two"}}`, "not a string"},
		{"number for a string", "POST", "/api/v1/tools", env.AdminToken, "application/json", `{"slug": 12, "title": "t", "source": "x"}`, `"slug" must be a string, not a number`},
		{"string for a bool", "POST", "/api/v1/tools", env.AdminToken, "application/json", `{"slug": "a", "title": "t", "source": "x", "publish": "yes"}`, "true or false"},
		{"overflow in a map", "POST", "/api/v1/start_action", u.Token, "application/json", `{"action_id": "a", "input": {"n": 1e400}}`, "1e400"},
		{"array for an object", "POST", "/api/v1/tools", env.AdminToken, "application/json", `[1, 2]`, "must be a JSON object, not an array"},
		{"cut short", "POST", "/api/v1/tools", env.AdminToken, "application/json", `{"slug": "a", "title`, "ends in the middle"},
		{"syntax error", "POST", "/api/v1/tools", env.AdminToken, "application/json", `{"slug" "a"}`, "at byte"},
		{"data after", "POST", "/api/v1/tools", env.AdminToken, "application/json", `{} {}`, "nothing after it"},
		{"inputs overflow", "POST", "/api/v1/tools/echo/runs", u.Token, mp, inputsBody(`{"n": 1e400}`), "1e400"},
		{"inputs syntax", "POST", "/api/v1/tools/echo/runs", u.Token, mp, inputsBody(`{"n": }`), "at byte"},
		{"boundary parameter malformed", "POST", "/api/v1/files", u.Token, `multipart/form-data; boundary="B`, "--B--\r\n", "multipart/form-data"},
		{"media parameter malformed", "POST", "/api/v1/tools/echo/runs", u.Token, "multipart/form-data; boundary=B; =x", "--B--\r\n", "multipart/form-data"},
		{"part disposition malformed", "POST", "/api/v1/files", u.Token, mp,
			"--B\r\nContent-Disposition: form-data; name=\"file\"; filename\r\n\r\nx\r\n--B--\r\n", "Content-Disposition"},
		{"content type malformed", "PUT", "/api/v1/files/files/x", u.Token, "text/plain; =x", "hello", "media type"},
		{"content_type field malformed", "POST", "/api/v1/files?content_type=" + "text%2Fplain%3B%20%3Dx", u.Token, mp,
			"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nx\r\n--B--\r\n", "media type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := send(t, env, tt.method, tt.path, tt.token, tt.ctype, strings.NewReader(tt.body))
			msg := a.errMessage()
			if a.status < 400 || a.status >= 500 || msg == "" {
				t.Fatalf("%d %s; want a 4xx with a message", a.status, a.raw)
			}
			for _, w := range goErrorWords {
				if strings.Contains(msg, w) {
					t.Errorf("the message carries Go error text %q: %s", w, msg)
				}
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("message %q lacks %q", msg, tt.want)
			}
		})
	}
}
