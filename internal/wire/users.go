package wire

import "time"

// User is a user as the API shows it (GET /api/v1/me, PATCH /api/v1/users/{id}).
type User struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Role        string    `json:"role"`
	HasPassword bool      `json:"has_password"`
	CreatedAt   time.Time `json:"created_at"`
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

// NewToken is the body of POST /api/v1/users/{id}/tokens: the token's name (a body is
// optional).
type NewToken struct {
	Name string `json:"name"`
}

// IssuedToken is the answer of POST /api/v1/users/{id}/tokens.
type IssuedToken struct {
	Token  string `json:"token"`
	UserID string `json:"user_id"`
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
