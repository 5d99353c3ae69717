package api_test

import (
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestPerUserLimitSettings: SKRIP_UPLOADS_PER_USER and SKRIP_TOKENS_PER_USER set below
// their defaults (100) take effect: a user with 2 unfinished resumable uploads gets 409
// upload_limit for a third, and a user holding 2 tokens 409 token_limit for a third,
// each naming the configured limit; another user is not refused.
func TestPerUserLimitSettings(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.UploadsPerUser = 2
	cfg.TokensPerUser = 2
	env := apptest.Start(t, cfg)
	_, u := env.User(t, "ulla", "user")
	_, other := env.User(t, "olle", "user")

	create := func(token string) answer {
		t.Helper()
		return send(t, env, "POST", "/api/v1/uploads/", token, "", nil, "Tus-Resumable", "1.0.0", "Upload-Length", "2",
			"Upload-Metadata", "key ZmlsZXMvcmVwb3J0LmNzdg==")
	}
	for i := range 2 {
		if a := create(u.Token); a.status != 201 {
			t.Fatalf("upload %d: %d %s", i+1, a.status, a.raw)
		}
	}
	past := create(u.Token)
	if past.status != 409 || !strings.Contains(past.raw, `"upload_limit"`) || !strings.Contains(past.raw, `"limit":2`) ||
		!strings.Contains(past.errMessage(), "you have 2 unfinished uploads") {
		t.Fatalf("a third unfinished upload: %d %s", past.status, past.raw)
	}
	if a := create(other.Token); a.status != 201 {
		t.Fatalf("another user's upload: %d %s", a.status, a.raw)
	}

	// The user holds their first token; one more fits, a third does not.
	token := func(caller, id string) answer {
		t.Helper()
		return send(t, env, "POST", "/api/v1/users/"+id+"/tokens", caller, "application/json", strings.NewReader(`{"name": "more"}`))
	}
	if a := token(u.Token, u.ID); a.status != 201 {
		t.Fatalf("a second token: %d %s", a.status, a.raw)
	}
	past = token(u.Token, u.ID)
	if past.status != 409 || !strings.Contains(past.raw, `"token_limit"`) || !strings.Contains(past.raw, `"limit":2`) {
		t.Fatalf("a third token: %d %s", past.status, past.raw)
	}
	if a := token(other.Token, other.ID); a.status != 201 {
		t.Fatalf("another user's token: %d %s", a.status, a.raw)
	}
}
