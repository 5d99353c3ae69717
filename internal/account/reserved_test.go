package account

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// TestReservedNames (a review's findings): no one picks the name "admin" for themselves,
// through sign-on or an invitation, since the bootstrap admin is found by that name and
// a person who took it after the admin was deleted would be made admin at the next start;
// and a tombstone's name is one no user can have, so no one can squat it and make a
// deletion fail.
func TestReservedNames(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := New(st, Limits{})
		ctx := context.Background()
		u, _, err := s.SignOn(ctx, Actor{Address: "192.0.2.1"}, Identity{Issuer: "https://idp.example", Subject: "s-admin", PreferredName: "admin", DefaultRole: "user"})
		if err != nil || u.Name != "admin-2" || u.Role != "user" {
			t.Fatalf("a sign-on whose preferred name is admin: %+v, %v; want admin-2", u, err)
		}
		if err := validName("admin"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "admin") {
			t.Fatalf("an invitee picking admin: %v, want ErrInvalid naming it", err)
		}
		if err := validName("admin2"); err != nil {
			t.Fatalf("admin2: %v", err)
		}
		if name := store.DeletedName("u_01ABC"); namePattern.MatchString(name) || validName(name) == nil {
			t.Fatalf("the tombstone name %q is one a user may pick", name)
		}
	})
}
