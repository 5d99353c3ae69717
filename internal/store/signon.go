package store

import (
	"context"
	"fmt"
)

// UserByOIDC returns the user bound to the sign-on identity (issuer, subject), whatever
// their state: a disabled user is found, so that sign-on can refuse them by name.
func (s *Store) UserByOIDC(ctx context.Context, issuer, subject string) (User, error) {
	u, err := scanUser(s.queryRow(ctx, "SELECT "+userCols+" FROM users WHERE oidc_issuer = ? AND oidc_subject = ?", issuer, subject))
	if err != nil {
		return User{}, fmt.Errorf("user of sign-on identity %q at %q: %w", subject, issuer, err)
	}
	return u, nil
}
