package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestAdmitRunCaps: 70 inserts of one user's runs at once, each on its own connection
// as API nodes would make them, make exactly PerUser runs; the others are ErrUserRuns,
// another user is still admitted, and a run that ends frees its place. Past Total,
// ErrAllRuns.
func TestAdmitRunCaps(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_a", "ada", RoleUser), newUser("u_b", "bo", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		v := ToolVersion{ID: "v_1", ToolID: "t_1", Source: "x", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
		if _, err := s.CreateTool(ctx, Tool{ID: "t_1", Slug: "t", Title: "T", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v, true); err != nil {
			t.Fatal(err)
		}
		runOf := func(id, user string) Run {
			return Run{ID: id, ToolID: "t_1", VersionID: "v_1", UserID: user, Context: "default", Kind: "initial", Status: StatusQueued,
				Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files":[]}`, CreatedAt: now}
		}
		caps := RunCaps{PerUser: 8, Total: 20}
		var mu sync.Mutex
		var admitted, refused int
		var first string // a run that was admitted
		var wg sync.WaitGroup
		for i := range 70 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("r_a%02d", i)
				err := s.AdmitRun(ctx, runOf(id, "u_a"), caps)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					admitted++
					first = id
				case errors.Is(err, ErrUserRuns):
					refused++
				default:
					t.Errorf("AdmitRun: %v", err)
				}
			}()
		}
		wg.Wait()
		if admitted != 8 || refused != 62 {
			t.Fatalf("70 at once: %d admitted, %d refused; want 8 and 62", admitted, refused)
		}
		if n, err := s.UnfinishedRuns(ctx, "u_a"); err != nil || n != 8 {
			t.Fatalf("UnfinishedRuns = %d, %v", n, err)
		}
		if err := s.AdmitRun(ctx, runOf("r_b1", "u_b"), caps); err != nil {
			t.Fatalf("another user: %v", err)
		}
		if _, err := s.EndRun(ctx, first, StatusCancelled, "cancelled", now); err != nil {
			t.Fatal(err)
		}
		if err := s.AdmitRun(ctx, runOf("r_a99", "u_a"), caps); err != nil {
			t.Fatalf("after one ended: %v", err)
		}
		if err := s.AdmitRun(ctx, runOf("r_b2", "u_b"), RunCaps{PerUser: 8, Total: 9}); !errors.Is(err, ErrAllRuns) {
			t.Fatalf("past the total: %v", err)
		}
	})
}
