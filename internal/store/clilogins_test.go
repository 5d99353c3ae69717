package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestCLILogins(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if err := s.CreateUser(ctx, newUser("u_1", "ada", RoleUser)); err != nil {
			t.Fatal(err)
		}
		now := time.Now().Truncate(time.Millisecond)
		caps := CLILoginCaps{Total: 3, PerAddress: 2}
		login := func(n int, addr string) CLILogin {
			return CLILogin{ID: fmt.Sprintf("cl_%d", n), DeviceHash: fmt.Sprintf("h%d", n), UserCode: fmt.Sprintf("CODE%04d", n),
				TokenName: "skrip CLI on box", Address: addr, CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
		}
		// Two from one address, then that address is full; a third from another fills
		// the total.
		for i, tc := range []struct {
			addr string
			want error
		}{{"10.0.0.1", nil}, {"10.0.0.1", nil}, {"10.0.0.1", ErrCLILoginsPerAddress}, {"10.0.0.2", nil}, {"10.0.0.3", ErrCLILoginsFull}} {
			if err := s.CreateCLILogin(ctx, login(i, tc.addr), caps); !errors.Is(err, tc.want) {
				t.Fatalf("login %d from %s: err = %v, want %v", i, tc.addr, err, tc.want)
			}
		}
		got, err := s.CLILoginByDevice(ctx, "h0")
		if err != nil || got.UserCode != "CODE0000" || got.Address != "10.0.0.1" || !got.ExpiresAt.Equal(now.Add(10*time.Minute)) || !got.Pending(now) {
			t.Fatalf("CLILoginByDevice = %+v, %v", got, err)
		}
		if _, err := s.CLILoginByCode(ctx, "CODE0002"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the refused login was stored: %v", err)
		}

		// Approve one, deny another; neither can be decided again.
		if err := s.DecideCLILogin(ctx, "CODE0000", "u_1", now); err != nil {
			t.Fatal(err)
		}
		if err := s.DecideCLILogin(ctx, "CODE0001", "", now); err != nil {
			t.Fatal(err)
		}
		for _, code := range []string{"CODE0000", "CODE0001", "NOSUCHCO"} {
			if err := s.DecideCLILogin(ctx, code, "u_1", now); !errors.Is(err, ErrNotFound) {
				t.Fatalf("deciding %s again: %v", code, err)
			}
		}
		if l, _ := s.CLILoginByCode(ctx, "CODE0001"); !l.Denied || l.ApprovedBy != "" || l.Pending(now) {
			t.Fatalf("denied login = %+v", l)
		}

		// Claiming the approved login stores the token once; the denied one gives none.
		tok := Token{ID: "t_1", UserID: "u_1", Hash: "tokhash", Name: "skrip CLI on box", CreatedAt: now}
		if err := s.ClaimCLILogin(ctx, "cl_0", tok, now); err != nil {
			t.Fatal(err)
		}
		if u, err := s.UserByTokenHash(ctx, "tokhash"); err != nil || u.ID != "u_1" {
			t.Fatalf("the claimed token: %+v, %v", u, err)
		}
		tok.ID, tok.Hash = "t_2", "tokhash2"
		if err := s.ClaimCLILogin(ctx, "cl_0", tok, now); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second claim: %v", err)
		}
		if err := s.ClaimCLILogin(ctx, "cl_1", tok, now); !errors.Is(err, ErrNotFound) {
			t.Fatalf("claiming a denied login: %v", err)
		}
		if _, err := s.UserByTokenHash(ctx, "tokhash2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a refused claim stored its token: %v", err)
		}

		// Past their expiry the logins are not counted against the caps, can't be
		// decided, and the sweep removes them.
		later := now.Add(11 * time.Minute)
		if err := s.DecideCLILogin(ctx, "CODE0003", "u_1", later); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deciding an expired login: %v", err)
		}
		l := login(9, "10.0.0.1")
		l.CreatedAt, l.ExpiresAt = later, later.Add(10*time.Minute)
		if err := s.CreateCLILogin(ctx, l, caps); err != nil {
			t.Fatalf("a login once the others expired: %v", err)
		}
		if n, err := s.DeleteExpiredCLILogins(ctx, later); err != nil || n != 2 {
			t.Fatalf("DeleteExpiredCLILogins = %d, %v; want 2 (cl_1, cl_3)", n, err)
		}
		if _, err := s.CLILoginByCode(ctx, "CODE0009"); err != nil {
			t.Fatalf("the fresh login was swept: %v", err)
		}
	})
}
