package store

import (
	"context"
	"errors"
	"testing"
)

func TestUserByOIDC(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		u := newUser("u_1", "ada", RoleUser)
		u.OIDCIssuer, u.OIDCSubject = "https://idp.example", "sub-1"
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		// The same subject at another issuer is another identity.
		other := newUser("u_2", "ada-2", RoleUser)
		other.OIDCIssuer, other.OIDCSubject = "https://other.example", "sub-1"
		if err := s.CreateUser(ctx, other); err != nil {
			t.Fatal(err)
		}
		got, err := s.UserByOIDC(ctx, "https://idp.example", "sub-1")
		if err != nil || got.ID != "u_1" || got.OIDCSubject != "sub-1" || got.State != StateActive {
			t.Fatalf("UserByOIDC = %+v, %v; want u_1", got, err)
		}
		if _, err := s.UserByOIDC(ctx, "https://idp.example", "sub-2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown subject: err = %v, want ErrNotFound", err)
		}
		// One identity binds one user.
		dup := newUser("u_3", "bob", RoleUser)
		dup.OIDCIssuer, dup.OIDCSubject = "https://idp.example", "sub-1"
		if err := s.CreateUser(ctx, dup); !errors.Is(err, ErrConflict) {
			t.Fatalf("a second user of one identity: err = %v, want ErrConflict", err)
		}
		// Password users have no identity and are never found by an empty one.
		if err := s.CreateUser(ctx, newUser("u_4", "carl", RoleUser)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UserByOIDC(ctx, "", ""); !errors.Is(err, ErrNotFound) {
			t.Fatalf("empty identity: err = %v, want ErrNotFound", err)
		}
	})
}
