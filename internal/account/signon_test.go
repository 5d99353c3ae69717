package account

import (
	"context"
	"errors"
	"testing"

	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

func TestSignOnName(t *testing.T) {
	for _, tc := range []struct{ preferred, email, want string }{
		{"anna", "x@y", "anna"},
		{"anna.berg@skola.se", "", "anna.berg"},
		{"", "Åsa.Öberg@skola.se", "Asa.Oberg"},
		{"Jürgen Müller", "", "Jurgen-Muller"},
		{"--.x", "", "x"},
		{"", "", "user"},
		{"中文", "", "user"},
		{"", "@skola.se", "user"},
		{"a/b\\c", "", "a-b-c"},
		{"xabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij", "", "xabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcde"},
	} {
		got := SignOnName(tc.preferred, tc.email)
		if got != tc.want || !namePattern.MatchString(got) {
			t.Errorf("SignOnName(%q, %q) = %q, want %q", tc.preferred, tc.email, got, tc.want)
		}
	}
	if n := numbered("abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd", "12"); len(n) > 64 || !namePattern.MatchString(n) {
		t.Errorf("numbered long name = %q", n)
	}
}

// TestSignOn: a person is found by (issuer, subject) and nothing else; the first
// sign-on makes their user, later ones keep it whatever their name or e-mail became,
// and the role follows the claim only when roles are managed.
func TestSignOn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := New(st, Limits{})
		ctx := context.Background()
		actor := Actor{Address: "192.0.2.1"}
		id := Identity{Issuer: "https://idp.example", Subject: "s1", PreferredName: "anna", Email: "anna@skola.se", DefaultRole: "user"}
		u, secret, err := s.SignOn(ctx, actor, id)
		if err != nil || u.Name != "anna" || u.Role != "user" || secret == "" {
			t.Fatalf("first sign-on: %+v, %v", u, err)
		}
		if got, err := s.SessionUser(ctx, secret); err != nil || got.ID != u.ID {
			t.Fatalf("the session signs in %+v, %v", got, err)
		}
		// Another issuer's subject s1, and one whose e-mail is anna's, are other people.
		other, _, err := s.SignOn(ctx, actor, Identity{Issuer: "https://other.example", Subject: "s1", Email: "anna@skola.se"})
		if err != nil || other.ID == u.ID || other.Name != "anna-2" {
			t.Fatalf("another issuer's s1: %+v, %v", other, err)
		}
		// A role set by hand stays while roles are not managed...
		if err := st.SetRole(ctx, u.ID, "author"); err != nil {
			t.Fatal(err)
		}
		id.PreferredName, id.Email = "anna.berg", "anna.berg@skola.se"
		again, _, err := s.SignOn(ctx, actor, id)
		if err != nil || again.ID != u.ID || again.Name != "anna" || again.Role != "author" {
			t.Fatalf("second sign-on: %+v, %v", again, err)
		}
		// ...and follows the claim when they are, down as well as up.
		id.ManagedRole, id.Role = true, "admin"
		if again, _, _ = s.SignOn(ctx, actor, id); again.Role != "admin" {
			t.Fatalf("mapped admin: %+v", again)
		}
		id.Role = ""
		// anna is the only admin: the claim can't take the role from the last one.
		if again, _, err = s.SignOn(ctx, actor, id); err != nil || again.Role != "admin" {
			t.Fatalf("the last admin without the claim: %+v, %v; want kept admin", again, err)
		}
		if _, _, err := s.CreateUser(ctx, root, "root", "admin", ""); err != nil {
			t.Fatal(err)
		}
		if again, _, _ = s.SignOn(ctx, actor, id); again.Role != "user" {
			t.Fatalf("no mapped role: %+v, want the default", again)
		}
		// Passwords for admins only: an author's right password is refused, an admin's not.
		if _, _, err := s.CreateUser(ctx, root, "lena", "author", "lenas-password"); err != nil {
			t.Fatal(err)
		}
		strict := New(st, Limits{AdminPasswordsOnly: true})
		if _, err := strict.CheckPassword(ctx, "lena", "lenas-password"); !errors.Is(err, ErrPasswordsOff) {
			t.Fatalf("an author's password with passwords for admins only: %v", err)
		}
		if _, _, err := strict.SignIn(ctx, "192.0.2.1", "lena", "lenas-password"); !errors.Is(err, ErrPasswordsOff) {
			t.Fatalf("an author's sign-in with passwords for admins only: %v", err)
		}
		if _, err := strict.CheckPassword(ctx, "lena", "wrong-password"); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("a wrong password: %v", err)
		}
		if _, err := s.CheckPassword(ctx, "lena", "lenas-password"); err != nil {
			t.Fatalf("passwords on: %v", err)
		}
	})
}
