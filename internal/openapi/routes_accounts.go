package openapi

import "github.com/skrip-dev/skrip/internal/wire"

// accountRoutes are users, tokens, sign-ins from the CLI, invitations and the audit log.
func accountRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/api/v1/me", Summary: "The caller, with what they hold by kind.", Answers: []Answer{OK(wire.Me{})}},
		{Method: "GET", Path: "/api/v1/me/sessions", Summary: "The caller's signed-in browsers.", Answers: []Answer{OK(wire.WebSessionList{})}},
		{Method: "DELETE", Path: "/api/v1/me/sessions", Summary: "Sign out every browser of the caller's.", Answers: []Answer{NoContent()}},
		{Method: "DELETE", Path: "/api/v1/me/sessions/{id}", Summary: "Sign out one browser.", Answers: []Answer{NoContent()}},
		{Method: "GET", Path: "/api/v1/users", Summary: "List users (admin).", Answers: []Answer{OK(wire.UserList{})}},
		{Method: "POST", Path: "/api/v1/users", Summary: "Create a user and its first token (admin).", Body: JSON(wire.NewUser{}),
			Answers: []Answer{Created(wire.CreatedUser{})}, Errors: []int{409}},
		{Method: "GET", Path: "/api/v1/users/{id}", Summary: "Show a user (admin, or the user).", Answers: []Answer{OK(wire.User{})}},
		{Method: "PATCH", Path: "/api/v1/users/{id}", Summary: "Change a user's role (admin).", Body: JSON(wire.RoleChange{}),
			Answers: []Answer{OK(wire.User{})}, Errors: []int{409}},
		{Method: "DELETE", Path: "/api/v1/users/{id}", Summary: "Delete a user (admin).", Answers: []Answer{NoContent()}, Errors: []int{409}},
		{Method: "POST", Path: "/api/v1/users/{id}/disable", Summary: "Disable a user (admin).", Answers: []Answer{OK(wire.User{})}, Errors: []int{409}},
		{Method: "POST", Path: "/api/v1/users/{id}/enable", Summary: "Enable a disabled user (admin).", Answers: []Answer{OK(wire.User{})}},
		{Method: "GET", Path: "/api/v1/users/{id}/export", Summary: "Everything skrip holds of a user, as a zip.",
			Answers: []Answer{{Status: 200, Media: "application/zip", Headers: []string{"Content-Disposition"}}}},
		{Method: "PUT", Path: "/api/v1/users/{id}/password", Summary: "Set a user's password.", Body: JSON(wire.NewPassword{}), Answers: []Answer{NoContent()}},
		{Method: "POST", Path: "/api/v1/users/{id}/tokens", Summary: "Issue a token; its secret is shown this once.", Body: OptionalJSON(wire.NewToken{}),
			Answers: []Answer{Created(wire.IssuedToken{})}, Errors: []int{409}},
		{Method: "GET", Path: "/api/v1/tokens", Summary: "List tokens (the caller's; an admin's may name ?user=).",
			Params: []Param{Query("user", "whose tokens (admin)")}, Answers: []Answer{OK(wire.TokenList{})}},
		{Method: "DELETE", Path: "/api/v1/tokens/{id}", Summary: "Revoke a token.", Answers: []Answer{NoContent()}},
		{Method: "POST", Path: "/api/v1/cli/logins", Auth: Public, Summary: "Start a CLI login (device flow).", Body: OptionalJSON(wire.CLILoginRequest{}),
			Answers: []Answer{Created(wire.CLILoginStart{})}, Errors: []int{429, 503}},
		{Method: "POST", Path: "/api/v1/cli/logins/token", Auth: Public, Summary: "Poll a CLI login for its token.", Body: JSON(wire.CLILoginPoll{}),
			Answers: []Answer{OK(wire.CLILoginToken{})}, Errors: []int{403, 410, 429}},
		{Method: "POST", Path: "/api/v1/invitations", Summary: "Invite someone to sign up with a role (admin).", Body: JSON(wire.NewInvitation{}),
			Answers: []Answer{Created(wire.Invitation{})}},
		{Method: "GET", Path: "/api/v1/audit", Summary: "The audit log, newest first (admin).",
			Params: []Param{QueryInt("limit", "events a page"), Query("cursor", "the previous page's cursor")}, Answers: []Answer{OK(wire.AuditList{})}},
		{Method: "POST", Path: "/api/v1/admin/cleanup", Summary: "Run a janitor pass now (admin).", Answers: []Answer{OK(wire.Cleanup{})}},
	}
}
