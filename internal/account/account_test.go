package account

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// root is the admin who creates the users of a test: CreateUser asks for an admin.
var root = Actor{User: store.User{ID: "u_root", Name: "root", Role: store.RoleAdmin}}

// TestCreateUser: the name, role and password rules of docs/spec.md §2, a duplicate name, and
// the first token, which is returned once and authenticates as the new user.
func TestCreateUser(t *testing.T) {
	cases := []struct {
		name, role, password string
		want                 error  // nil, or the sentinel the refusal wraps
		wantRole             string // of a created user
	}{
		{name: "ada", wantRole: store.RoleUser},
		{name: "grace", role: store.RoleAuthor, wantRole: store.RoleAuthor},
		{name: "root", role: store.RoleAdmin, wantRole: store.RoleAdmin},
		{name: "ada.lovelace@example.org", role: store.RoleUser, wantRole: store.RoleUser},
		{name: "A1_b-c", wantRole: store.RoleUser},
		{name: "x" + strings.Repeat("y", 63), wantRole: store.RoleUser},
		{name: "with-password", password: "12345678", wantRole: store.RoleUser},
		{name: "", want: ErrInvalid},
		{name: "x" + strings.Repeat("y", 64), want: ErrInvalid},
		{name: "-ada", want: ErrInvalid},
		{name: ".ada", want: ErrInvalid},
		{name: "ada lovelace", want: ErrInvalid},
		{name: "åsa", want: ErrInvalid},
		{name: "ada/../x", want: ErrInvalid},
		{name: "rolebad", role: "root", want: ErrInvalid},
		{name: "rolecase", role: "Admin", want: ErrInvalid},
		{name: "shortpw", password: "1234567", want: ErrInvalid},
		{name: "ada", want: ErrExists}, // the first row took it
	}
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := New(st, Limits{})
		ctx := context.Background()
		for _, tc := range cases {
			u, tok, err := s.CreateUser(ctx, root, tc.name, tc.role, tc.password)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Errorf("CreateUser(%q, %q, %q) = %v, want %v", tc.name, tc.role, tc.password, err, tc.want)
				}
				if tc.want == ErrInvalid {
					if _, err := st.UserByName(ctx, tc.name); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("a refused CreateUser(%q) stored a user: %v", tc.name, err)
					}
				}
				continue
			}
			if err != nil {
				t.Errorf("CreateUser(%q, %q, %q) = %v", tc.name, tc.role, tc.password, err)
				continue
			}
			if u.Name != tc.name || u.Role != tc.wantRole || u.ID == "" {
				t.Errorf("CreateUser(%q, %q) = %+v, want role %s", tc.name, tc.role, u, tc.wantRole)
			}
			if !strings.HasPrefix(tok, auth.TokenPrefix) {
				t.Errorf("first token %q lacks the %s prefix", tok, auth.TokenPrefix)
			}
			if got, err := s.Authenticate(ctx, tok); err != nil || got.ID != u.ID {
				t.Errorf("the first token of %s authenticates as %+v, %v", tc.name, got, err)
			}
			// A password is checked with argon2: only the user made with one is asked.
			if stored, err := st.UserByName(ctx, tc.name); err != nil || (stored.PasswordHash == "") != (tc.password == "") {
				t.Errorf("%s was stored as %+v, %v; made with password %q", tc.name, stored, err, tc.password)
			}
			if tc.password != "" {
				if _, err := s.CheckPassword(ctx, tc.name, tc.password); err != nil {
					t.Errorf("%s does not sign in with the password it was made with: %v", tc.name, err)
				}
			}
		}
	})
}

// TestTokens: every issued token authenticates as its user, alongside the others; the
// store keeps only a hash; a token never issued, a truncated one and an empty one are
// refused with ErrUnauthenticated.
func TestTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := New(st, Limits{})
		ctx := context.Background()
		ada, first, err := s.CreateUser(ctx, root, "ada", store.RoleAuthor, "")
		if err != nil {
			t.Fatal(err)
		}
		bob, bobs, err := s.CreateUser(ctx, root, "bob", store.RoleUser, "")
		if err != nil {
			t.Fatal(err)
		}
		_, second, err := s.CreateToken(ctx, Actor{User: ada}, ada.ID, TokenSpec{Name: "laptop"})
		if err != nil {
			t.Fatal(err)
		}
		if second == first {
			t.Fatal("CreateToken returned the first token again")
		}
		for _, tc := range []struct {
			token string
			want  string // user id; "" is refused
		}{
			{first, ada.ID},
			{second, ada.ID},
			{bobs, bob.ID},
			{auth.NewToken(), ""},
			{second[:len(second)-1], ""},
			{"", ""},
			{auth.HashToken(second), ""}, // what the store holds is not a credential
		} {
			u, err := s.Authenticate(ctx, tc.token)
			switch {
			case tc.want == "" && !errors.Is(err, ErrUnauthenticated):
				t.Errorf("Authenticate(%q) = %+v, %v; want ErrUnauthenticated", tc.token, u, err)
			case tc.want != "" && (err != nil || u.ID != tc.want):
				t.Errorf("Authenticate(%q) = %+v, %v; want %s", tc.token, u, err, tc.want)
			}
		}
		if _, err := st.UserByTokenHash(ctx, second); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the store holds the token itself: %v", err)
		}
	})
}

// TestSignIn: a password signs in and the secret finds the user until it is signed out,
// a new password is set (which signs out every browser), or SessionMax passes, after
// which ExpireSignIns removes it. A wrong password, an unknown name and a user without a
// password all get the same ErrUnauthenticated.
func TestSignIn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		// No idle expiry to speak of here: TestWebSessionExpiry has that.
		s := New(st, Limits{WebSessionIdle: 365 * 24 * time.Hour})
		clock := time.Now()
		s.now = func() time.Time { return clock }
		ctx := context.Background()
		ada, _, err := s.CreateUser(ctx, root, "ada", store.RoleUser, "correct horse")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.CreateUser(ctx, root, "nopw", store.RoleUser, ""); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ name, password string }{
			{"ada", "wrong horse"}, {"nobody", "correct horse"}, {"nopw", ""},
		} {
			u, secret, err := s.SignIn(ctx, "192.0.2.1", tc.name, tc.password)
			if !errors.Is(err, ErrUnauthenticated) || secret != "" || u.ID != "" {
				t.Errorf("SignIn(%q, %q) = %+v, %q, %v; want ErrUnauthenticated", tc.name, tc.password, u, secret, err)
			} else if err.Error() != "wrong name or password" {
				t.Errorf("SignIn(%q, %q) says %q, which tells the cases apart", tc.name, tc.password, err)
			}
		}

		signIn := func(password string) string {
			t.Helper()
			u, secret, err := s.SignIn(ctx, "192.0.2.1", "ada", password)
			if err != nil || u.ID != ada.ID || secret == "" {
				t.Fatalf("SignIn = %+v, %q, %v", u, secret, err)
			}
			return secret
		}
		signedIn := func(secret string) bool {
			t.Helper()
			u, err := s.SessionUser(ctx, secret)
			if err != nil && !errors.Is(err, ErrUnauthenticated) {
				t.Fatal(err)
			}
			if err == nil && u.ID != ada.ID {
				t.Fatalf("SessionUser = %+v, want ada", u)
			}
			return err == nil
		}

		out, kept := signIn("correct horse"), signIn("correct horse")
		if !signedIn(out) || !signedIn(kept) {
			t.Fatal("fresh sign-ins do not find the user")
		}
		if signedIn(auth.NewToken()) {
			t.Fatal("a secret never issued finds a user")
		}
		if err := s.SignOut(ctx, out); err != nil {
			t.Fatal(err)
		}
		if signedIn(out) || !signedIn(kept) {
			t.Fatalf("after signing one browser out: that one %v, the other %v; want false, true", signedIn(out), signedIn(kept))
		}

		if err := s.SetPassword(ctx, ada.ID, "short"); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetPassword to a short one = %v, want ErrInvalid", err)
		}
		if !signedIn(kept) {
			t.Fatal("a refused SetPassword signed the user out")
		}
		if err := s.SetPassword(ctx, ada.ID, "battery staple"); err != nil {
			t.Fatal(err)
		}
		if signedIn(kept) {
			t.Error("a new password left a browser signed in")
		}
		if _, _, err := s.SignIn(ctx, "192.0.2.1", "ada", "correct horse"); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("the old password still signs in: %v", err)
		}

		// Expiry: a sign-in lasts SessionMax; the janitor's ExpireSignIns removes it after.
		old := signIn("battery staple")
		signIn("battery staple")
		clock = clock.Add(time.Hour)
		young := signIn("battery staple")
		if n, err := s.ExpireSignIns(ctx); err != nil || n != 0 {
			t.Fatalf("ExpireSignIns before any expired = %d, %v", n, err)
		}
		clock = clock.Add(s.SessionMax() - time.Hour)
		if signedIn(old) {
			t.Error("a sign-in outlived SessionMax")
		}
		if !signedIn(young) {
			t.Error("a sign-in younger than SessionMax expired")
		}
		if n, err := s.ExpireSignIns(ctx); err != nil || n != 2 {
			t.Errorf("ExpireSignIns = %d, %v; want the 2 sign-ins older than SessionMax", n, err)
		}
		if n, err := s.ExpireSignIns(ctx); err != nil || n != 0 {
			t.Errorf("a second ExpireSignIns = %d, %v; want 0", n, err)
		}
		if !signedIn(young) {
			t.Error("ExpireSignIns ended a sign-in that had not expired")
		}
	})
}

// TestSignInBurst: wrong-password sign-ins for one name that arrive together, 16 at once
// with 5 free failures for the name, get exactly 5 password checks (counted by the
// answers: a check answers ErrUnauthenticated, a throttled sign-in ErrThrottled without
// one), not one each as when the throttle only counted failures once they had failed.
// When the wait is over, another burst gets exactly one check; the right password after
// the next wait signs in and clears the count, so a wrong one is checked again. An unknown name is treated the same. The
// clock stands still, so no free failure comes back and no wait ends but by the test.
// One store is enough (the throttle is the service's), and each check costs an argon2id
// hash, slow under -race.
func TestSignInBurst(t *testing.T) {
	st := storetest.SQLite(t)
	s := New(st, Limits{FailuresPerName: 5, Wait: time.Minute})
	clock := time.Now()
	s.now = func() time.Time { return clock }
	ctx := context.Background()
	if _, _, err := s.CreateUser(ctx, root, "ada", store.RoleUser, "correct horse"); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"ada", "nobody"} {
		client := fmt.Sprintf("192.0.2.%d", i+1)
		burst := func(n int) (checked int) {
			t.Helper()
			errc := make(chan error, n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					_, _, err := s.SignIn(ctx, client, name, "wrong horse")
					errc <- err
				})
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				switch {
				case errors.Is(err, ErrUnauthenticated):
					checked++
				case errors.Is(err, ErrThrottled):
				default:
					t.Errorf("%s: a sign-in of the burst answered %v", name, err)
				}
			}
			return checked
		}
		if n := burst(16); n != 5 {
			t.Errorf("%s: 16 sign-ins at once got %d password checks, want 5 (the free failures)", name, n)
		}
		clock = clock.Add(2 * time.Second) // the first wait
		if n := burst(16); n != 1 {
			t.Errorf("%s: after the wait 16 sign-ins at once got %d password checks, want 1", name, n)
		}
		clock = clock.Add(4 * time.Second) // the second
		if name == "ada" {
			if _, _, err := s.SignIn(ctx, client, name, "correct horse"); err != nil {
				t.Fatalf("after the wait the right password: %v", err)
			}
			if _, _, err := s.SignIn(ctx, client, name, "wrong horse"); !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("after a success a wrong password answered %v, want ErrUnauthenticated (the count cleared)", err)
			}
		}
	}
}

// TestBootstrap: a first start with no users and no token makes "admin" and writes its
// token to <data>/admin-token, mode 0600; later starts leave everything as it is. With a
// configured token, "admin" accepts it, however often it runs, and a short token is
// refused.
func TestBootstrap(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := New(st, Limits{})
		dir := t.TempDir()
		path := filepath.Join(dir, AdminTokenFile)
		if err := s.Bootstrap(ctx, "", dir, log); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", AdminTokenFile, info.Mode().Perm())
		}
		raw, _ := os.ReadFile(path)
		tok := strings.TrimSuffix(string(raw), "\n")
		if u, err := s.Authenticate(ctx, tok); err != nil || u.Name != "admin" || u.Role != store.RoleAdmin {
			t.Fatalf("the token in %s authenticates as %+v, %v; want admin", AdminTokenFile, u, err)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) != 0 {
			t.Errorf("Bootstrap left %v", left)
		}
		// A second start, its file read and deleted: nothing new.
		os.Remove(path)
		if err := s.Bootstrap(ctx, "", dir, log); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a second start wrote %s again: %v", AdminTokenFile, err)
		}
		if n, _ := st.CountUsers(ctx); n != 1 {
			t.Errorf("%d users after two starts, want 1", n)
		}

		// A configured token: accepted by admin, every time, and idempotent.
		const configured = "skr_configured-admin-token-0123"
		for range 2 {
			if err := s.Bootstrap(ctx, configured, dir, log); err != nil {
				t.Fatal(err)
			}
		}
		if u, err := s.Authenticate(ctx, configured); err != nil || u.Name != "admin" || u.Role != store.RoleAdmin {
			t.Errorf("the configured token authenticates as %+v, %v", u, err)
		}
		if u, err := s.Authenticate(ctx, tok); err != nil || u.Name != "admin" {
			t.Errorf("the first-start token stopped working: %+v, %v", u, err)
		}
		if n, _ := st.CountUsers(ctx); n != 1 {
			t.Errorf("%d users after bootstrapping with a token, want 1", n)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("bootstrapping with a token wrote %s: %v", AdminTokenFile, err)
		}
		if err := s.Bootstrap(ctx, strings.Repeat("x", auth.MinBootstrapTokenLen-1), dir, log); err == nil {
			t.Error("a bootstrap token shorter than MinBootstrapTokenLen was accepted")
		}
	})
}

// TestBootstrapTokenOnAFreshServer: a configured token on a server without users makes
// admin with that token and writes no token file.
func TestBootstrapTokenOnAFreshServer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := New(st, Limits{})
		dir := t.TempDir()
		const configured = "skr_configured-admin-token-0123"
		if err := s.Bootstrap(ctx, configured, dir, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		if u, err := s.Authenticate(ctx, configured); err != nil || u.Name != "admin" || u.Role != store.RoleAdmin {
			t.Errorf("the configured token authenticates as %+v, %v", u, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("the data dir holds %d entries, want none", len(entries))
		}
	})
}
