package wire

// CLILoginRequest is the optional body of POST /api/v1/cli/logins: the machine the
// token will be named after ("skrip CLI on <machine>").
type CLILoginRequest struct {
	Machine string `json:"machine,omitempty"`
}

// CLILoginToken is the answer of POST /api/v1/cli/logins/token once the user approved:
// the new token (its secret this once), its id and name, and whose it is.
type CLILoginToken struct {
	Token string `json:"token"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	User  User   `json:"user"`
}
