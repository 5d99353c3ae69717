package wire

import "time"

// User is a user as the API shows it (GET /api/v1/me, PATCH /api/v1/users/{id}).
type User struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Role        string    `json:"role"`
	HasPassword bool      `json:"has_password"`
	CreatedAt   time.Time `json:"created_at"`
	// State is active or disabled (a deleted user is not shown).
	State string `json:"state"`
	// SignOn is the issuer the user signs in through, when bound to one.
	SignOn string `json:"sign_on,omitempty"`
}

// UserList is the answer of GET /api/v1/users.
type UserList struct {
	Count int    `json:"count"`
	Users []User `json:"users"`
}

// NewUser is the body of POST /api/v1/users. Without a password the user signs in with
// tokens only.
type NewUser struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Password string `json:"password,omitempty"`
}

// CreatedUser is the answer of POST /api/v1/users: the new user and its first token.
type CreatedUser struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Role  string `json:"role"`
	Token string `json:"token"`
}

// RoleChange is the body of PATCH /api/v1/users/{id}.
type RoleChange struct {
	Role string `json:"role"`
}

// NewPassword is the body of PUT /api/v1/users/{id}/password.
type NewPassword struct {
	Password string `json:"password"`
}

// NewToken is the body of POST /api/v1/users/{id}/tokens (a body is optional): the
// token's name, its scope ("all" when empty, or a list of files, runs, sandboxes, read)
// and how long it lasts (a Go or day duration such as "720h" or "30d"; empty: until
// revoked).
type NewToken struct {
	Name      string   `json:"name"`
	Scope     []string `json:"scope,omitempty"`
	ExpiresIn string   `json:"expires_in,omitempty"`
}

// Token is an API token as listed (GET /api/v1/tokens): never its secret.
type Token struct {
	ID         string     `json:"id"`
	UserID     string     `json:"user_id"`
	User       string     `json:"user"`
	Name       string     `json:"name"`
	Scope      []string   `json:"scope"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// TokenList is the answer of GET /api/v1/tokens.
type TokenList struct {
	Count  int     `json:"count"`
	Tokens []Token `json:"tokens"`
}

// IssuedToken is the answer of POST /api/v1/users/{id}/tokens: the token's listing and,
// this once, its secret.
type IssuedToken struct {
	Token
	Secret string `json:"token"`
}

// WebSession is one of a user's signed-in browsers (GET /api/v1/me/sessions).
type WebSession struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	Address    string    `json:"address"`
	UserAgent  string    `json:"user_agent"`
	Current    bool      `json:"current"`
}

// AuditEvent is one admin or security action (GET /api/v1/audit).
type AuditEvent struct {
	ID      string         `json:"id"`
	At      time.Time      `json:"at"`
	Actor   string         `json:"actor"`
	Action  string         `json:"action"`
	Target  string         `json:"target"`
	Address string         `json:"address"`
	Details map[string]any `json:"details"`
}

// AuditList is a page of GET /api/v1/audit, newest first; Cursor, when not empty, asks
// for the next page.
type AuditList struct {
	Events []AuditEvent `json:"events"`
	Cursor string       `json:"cursor,omitempty"`
}

// NewInvitation is the body of POST /api/v1/invitations.
type NewInvitation struct {
	Role      string `json:"role"`
	ExpiresIn string `json:"expires_in,omitempty"`
}

// Invitation is the answer of POST /api/v1/invitations: the page the invitee opens.
type Invitation struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// CLILoginStart is the answer of POST /api/v1/cli/logins (no token needed): the CLI keeps
// DeviceCode secret and polls with it; the user opens VerificationURL and checks that
// the page shows UserCode.
type CLILoginStart struct {
	DeviceCode      string `json:"device_code"`
	UserCode        string `json:"user_code"`
	VerificationURL string `json:"verification_url"`
	ExpiresIn       int    `json:"expires_in"` // seconds
	Interval        int    `json:"interval"`   // seconds between polls
}

// CLILoginPoll is the body of POST /api/v1/cli/logins/token.
type CLILoginPoll struct {
	DeviceCode string `json:"device_code"`
}

// Me is the answer of GET /api/v1/me: the caller, with what they hold by kind.
type Me struct {
	User
	Usage Usage `json:"usage"`
}

// Usage is what one user holds in the store, in bytes, by kind (SPEC §12 "One quota per
// user"). Total is every kind together, which the quota bounds.
type Usage struct {
	Files        int64 `json:"files"`         // live staged files
	Versions     int64 `json:"versions"`      // previous versions kept of them
	Uploads      int64 `json:"uploads"`       // reserved by unfinished resumable uploads
	Runs         int64 `json:"runs"`          // runs' artifacts, outputs and logs, until the artifacts expire
	SessionFiles int64 `json:"session_files"` // tool sessions' current files
	Retained     int64 `json:"retained"`      // old bytes of overwritten or deleted files, until they are freed
	Total        int64 `json:"total"`
	Quota        int64 `json:"quota"`
}
