package account_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// root is the admin who creates the people of a test: CreateUser asks for an admin.
var root = account.Actor{User: store.User{ID: "u_root", Name: "root", Role: store.RoleAdmin}}

// people is a fresh account service over a SQLite store in a temp dir, with an admin
// (admin), an author (ada) and a user (ulf) who has a password.
type people struct {
	svc             *account.Service
	st              *store.Store
	admin, ada, ulf store.User
	ulfPassword     string
}

func newPeople(t *testing.T) people {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "", filepath.Join(t.TempDir(), "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p := people{svc: account.New(st, account.Limits{}), st: st, ulfPassword: "long enough"}
	for _, u := range []struct {
		into                 *store.User
		name, role, password string
	}{
		{&p.admin, "admin", store.RoleAdmin, ""},
		{&p.ada, "ada", store.RoleAuthor, ""},
		{&p.ulf, "ulf", store.RoleUser, p.ulfPassword},
	} {
		if *u.into, _, err = p.svc.CreateUser(ctx, root, u.name, u.role, u.password); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func TestRequireAdmin(t *testing.T) {
	for _, tc := range []struct {
		role string
		want error
	}{
		{store.RoleAdmin, nil},
		{store.RoleAuthor, account.ErrForbidden},
		{store.RoleUser, account.ErrForbidden},
		{"", account.ErrForbidden},
	} {
		err := account.RequireAdmin(store.User{ID: "u_1", Name: "x", Role: tc.role}, "testing")
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("RequireAdmin(%q) = %v, want %v", tc.role, err, tc.want)
		}
	}
}

// TestLookup: anyone finds themselves by id or name and an admin finds anyone; anyone
// else naming another user is told exactly what naming a missing user tells them, so
// the answer never says whether a name exists.
func TestLookup(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	for _, tc := range []struct {
		name   string
		caller store.User
		ref    string
		want   string // the found user's name; empty: ErrNotFound
	}{
		{"self by id", p.ulf, p.ulf.ID, "ulf"},
		{"self by name", p.ulf, "ulf", "ulf"},
		{"author self by name", p.ada, "ada", "ada"},
		{"admin self by name", p.admin, "admin", "admin"},
		{"admin, another by id", p.admin, p.ada.ID, "ada"},
		{"admin, another by name", p.admin, "ulf", "ulf"},
		{"admin, missing id", p.admin, "u_nobody", ""},
		{"admin, missing name", p.admin, "nobody", ""},
		{"user, another by id", p.ulf, p.ada.ID, ""},
		{"user, another by name", p.ulf, "ada", ""},
		{"user, the admin by name", p.ulf, "admin", ""},
		{"author, another by name", p.ada, "ulf", ""},
		{"user, missing name", p.ulf, "nobody", ""},
		{"user, empty", p.ulf, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := p.svc.Lookup(ctx, tc.caller, tc.ref)
			if tc.want != "" {
				if err != nil || u.Name != tc.want {
					t.Fatalf("Lookup(%s, %q) = %+v, %v; want %s", tc.caller.Name, tc.ref, u, err, tc.want)
				}
				return
			}
			if !errors.Is(err, account.ErrNotFound) || u != (store.User{}) {
				t.Fatalf("Lookup(%s, %q) = %+v, %v; want ErrNotFound", tc.caller.Name, tc.ref, u, err)
			}
			if tc.ref == "" {
				return
			}
			// What a missing user's answer says, with this ref in it: nothing more.
			_, missing := p.svc.Lookup(ctx, tc.caller, "nobody")
			if got, want := describe(err, tc.ref), describe(missing, "nobody"); got != want {
				t.Errorf("naming %q answers %q; naming a missing user answers %q", tc.ref, got, want)
			}
		})
	}
}

// describe is err's client-facing message and details with ref replaced by "REF".
func describe(err error, ref string) string {
	var e *errs.Error
	if !errors.As(err, &e) {
		return "not an errs.Error: " + err.Error()
	}
	s := e.Message
	for _, k := range slices.Sorted(maps.Keys(e.Details)) {
		v, _ := e.Details[k].(string)
		s += " " + k + "=" + v
	}
	return strings.ReplaceAll(s, ref, "REF")
}

func TestSetRole(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	for _, tc := range []struct {
		name      string
		caller    store.User
		ref, role string
		want      error
		stored    string // ref's role in the store afterwards
	}{
		{"user", p.ulf, "ulf", store.RoleAdmin, account.ErrForbidden, store.RoleUser},
		{"author", p.ada, "ulf", store.RoleAuthor, account.ErrForbidden, store.RoleUser},
		{"author on self", p.ada, "ada", store.RoleAdmin, account.ErrForbidden, store.RoleAuthor},
		{"bad role", p.admin, "ulf", "root", account.ErrInvalid, store.RoleUser},
		{"empty role", p.admin, "ulf", "", account.ErrInvalid, store.RoleUser},
		{"missing user", p.admin, "nobody", store.RoleAuthor, account.ErrNotFound, ""},
		{"by name", p.admin, "ulf", store.RoleAuthor, nil, store.RoleAuthor},
		{"by id", p.admin, p.ada.ID, store.RoleUser, nil, store.RoleUser},
		{"the last active admin", p.admin, "admin", store.RoleAuthor, account.ErrLastAdmin, store.RoleAdmin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := p.svc.SetRole(ctx, tc.caller, tc.ref, tc.role)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("SetRole(%s, %q, %q) = %v, want %v", tc.caller.Name, tc.ref, tc.role, err, tc.want)
			}
			if err == nil && u.Role != tc.role {
				t.Errorf("SetRole returned role %q, want %q", u.Role, tc.role)
			}
			if tc.stored == "" {
				return
			}
			got, err := p.svc.Lookup(ctx, p.admin, tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if stored, err := p.st.User(ctx, got.ID); err != nil || stored.Role != tc.stored {
				t.Errorf("stored role of %s = %q, %v; want %q", tc.ref, stored.Role, err, tc.stored)
			}
		})
	}
}

func TestUsers(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	for _, tc := range []struct {
		caller store.User
		want   error
	}{
		{p.admin, nil},
		{p.ada, account.ErrForbidden},
		{p.ulf, account.ErrForbidden},
	} {
		us, err := p.svc.Users(ctx, tc.caller)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Users(%s) = %v, want %v", tc.caller.Name, err, tc.want)
			continue
		}
		if err != nil {
			if us != nil {
				t.Errorf("Users(%s) refused but listed %d users", tc.caller.Name, len(us))
			}
			continue
		}
		var names []string
		for _, u := range us {
			names = append(names, u.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"ada", "admin", "ulf"}) {
			t.Errorf("Users(%s) = %v", tc.caller.Name, names)
		}
	}
}

// TestBrowserUser: a signed-in browser may read without the anti-forgery token, but a
// change needs the token of its own session; a signed-out or unknown secret is refused.
func TestBrowserUser(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	_, secret, err := p.svc.SignIn(ctx, "192.0.2.1", "ulf", p.ulfPassword)
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := p.svc.SignIn(ctx, "192.0.2.1", "ulf", p.ulfPassword)
	if err != nil {
		t.Fatal(err)
	}
	_, gone, err := p.svc.SignIn(ctx, "192.0.2.1", "ulf", p.ulfPassword)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.svc.SignOut(ctx, gone); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, secret, csrf string
		changes            bool
		want               error
	}{
		{"read, no token", secret, "", false, nil},
		{"read, wrong token", secret, "nonsense", false, nil},
		{"change, right token", secret, auth.CSRFToken(secret), true, nil},
		{"change, no token", secret, "", true, account.ErrForgery},
		{"change, garbage token", secret, "nonsense", true, account.ErrForgery},
		{"change, another session's token", secret, auth.CSRFToken(other), true, account.ErrForgery},
		{"change, the secret as token", secret, secret, true, account.ErrForgery},
		{"signed out, read", gone, "", false, account.ErrUnauthenticated},
		{"signed out, change with its token", gone, auth.CSRFToken(gone), true, account.ErrUnauthenticated},
		{"unknown secret", "not-a-session", auth.CSRFToken("not-a-session"), true, account.ErrUnauthenticated},
		{"empty secret", "", "", false, account.ErrUnauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := p.svc.BrowserUser(ctx, tc.secret, tc.csrf, tc.changes)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("BrowserUser = %q, %v; want %v", u.Name, err, tc.want)
			}
			if err == nil && u.ID != p.ulf.ID {
				t.Errorf("BrowserUser = %+v, want ulf", u)
			}
			if err != nil && u != (store.User{}) {
				t.Errorf("refused, but returned %+v", u)
			}
		})
	}
}

func TestCreateUserExists(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	for _, tc := range []struct {
		name, role string
		want       error
	}{
		{"ulf", store.RoleUser, account.ErrExists},
		{"ada", store.RoleAdmin, account.ErrExists},
		{"ulf2", store.RoleUser, nil},
	} {
		_, tok, err := p.svc.CreateUser(ctx, account.Actor{User: p.admin}, tc.name, tc.role, "")
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("CreateUser(%q) = %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && tok != "" {
			t.Errorf("CreateUser(%q) refused but issued a token", tc.name)
		}
	}
	// The refused duplicate left the first user as it was.
	if u, err := p.st.UserByName(ctx, "ada"); err != nil || u.ID != p.ada.ID || u.Role != store.RoleAuthor {
		t.Errorf("ada after a duplicate = %+v, %v", u, err)
	}
}

// TestCallerRules (issue 31): creating users and issuing tokens take the caller, so the
// API and the web UI get one answer: only an admin creates users (of any role); anyone
// makes their own tokens, an admin anyone's, and anyone else's is answered as if
// missing; the token's own rules bind an admin making another's token too.
func TestCallerRules(t *testing.T) {
	ctx := context.Background()
	p := newPeople(t)
	for _, tc := range []struct {
		caller store.User
		name   string
		want   error
	}{
		{p.admin, "new-admin", nil},
		{p.ada, "by-author", account.ErrForbidden},
		{p.ulf, "by-user", account.ErrForbidden},
	} {
		_, tok, err := p.svc.CreateUser(ctx, account.Actor{User: tc.caller}, tc.name, store.RoleAdmin, "")
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s creating %s: %v, want %v", tc.caller.Name, tc.name, err, tc.want)
		}
		if _, lerr := p.st.UserByName(ctx, tc.name); (lerr == nil) != (tc.want == nil) || (err != nil && tok != "") {
			t.Errorf("%s creating %s: stored %v, token %q; want stored only when allowed", tc.caller.Name, tc.name, lerr == nil, tok)
		}
	}
	capped := account.New(p.st, account.Limits{TokenMaxLifetime: 24 * time.Hour})
	for _, tc := range []struct {
		caller, target store.User
		spec           account.TokenSpec
		want           error
	}{
		{p.ulf, p.ulf, account.TokenSpec{Name: "own"}, nil},
		{p.ulf, p.ada, account.TokenSpec{Name: "another's"}, account.ErrNotFound},
		{p.ada, p.admin, account.TokenSpec{Name: "the admin's"}, account.ErrNotFound},
		{p.admin, p.ulf, account.TokenSpec{Name: "for ulf"}, nil},
		{p.admin, p.ulf, account.TokenSpec{Name: "too long", ExpiresIn: "30d"}, account.ErrBadToken},
		{p.admin, p.ulf, account.TokenSpec{Name: "bad scope", Scope: []string{"everything"}}, account.ErrBadToken},
	} {
		tok, secret, err := capped.CreateToken(ctx, account.Actor{User: tc.caller}, tc.target.ID, tc.spec)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s making %s's token %q: %v, want %v", tc.caller.Name, tc.target.Name, tc.spec.Name, err, tc.want)
			continue
		}
		if err != nil {
			continue
		}
		if u, err := capped.Authenticate(ctx, secret); err != nil || u.ID != tc.target.ID || tok.UserName != tc.target.Name {
			t.Errorf("%s's token %q by %s authenticates as %+v (%v), names %q", tc.target.Name, tc.spec.Name, tc.caller.Name, u, err, tok.UserName)
		}
	}
}
