package session

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// stepsEnv is a session service over st with one tool of two versions.
func stepsEnv(t *testing.T, st *store.Store) (*Service, store.SessionKey, store.SessionKey) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	if err := st.CreateUser(ctx, store.User{ID: "u_1", Name: "u", Role: store.RoleAuthor, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTool(ctx, store.Tool{ID: "t_1", Slug: "t", Title: "t", AuthorID: "u_1", CreatedAt: now, UpdatedAt: now},
		store.ToolVersion{ID: "v_1", ToolID: "t_1", Source: "x", Entrypoint: "run_tool", CreatedBy: "u_1", CreatedAt: now}, false); err != nil {
		t.Fatal(err)
	}
	blobs, err := fsblob.New(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	s := New(st, blobs, time.Hour, slog.New(slog.DiscardHandler))
	return s, Editor("v_1").Key("t_1", "u_1"), Editor("v_2").Key("t_1", "u_1")
}

// An editor session keeps its steps; going back makes a step's state and run current
// as a new revision, and a stale revision changes nothing.
func TestGoBack(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, k, _ := stepsEnv(t, st)
		ctx := context.Background()
		if _, err := s.Start(ctx, k, []byte(`{"step": 1}`), "r_1"); err != nil {
			t.Fatal(err)
		}
		for i, state := range []string{`{"step": 2}`, `{"step": 3}`} {
			if ok, err := s.Advance(ctx, k, int64(i+1), []byte(state), "r_"+string(rune('2'+i))); err != nil || !ok {
				t.Fatalf("advance %d: %v %v", i, ok, err)
			}
		}
		steps, err := s.Steps(ctx, k)
		if err != nil || len(steps) != 3 || steps[0].StateRev != 3 || steps[2].State != `{"step": 1}` || steps[1].RunID != "r_2" {
			t.Fatalf("steps: %+v, %v", steps, err)
		}
		// A page at revision 2 is stale: nothing changes.
		if _, err := s.GoBack(ctx, k, 2, 1); !errors.Is(err, ErrConflict) {
			t.Fatalf("stale go back: %v, want a conflict", err)
		}
		if _, err := s.GoBack(ctx, k, 3, 9); !errors.Is(err, ErrNoStep) {
			t.Fatalf("go back to a step never kept: %v", err)
		}
		rev, err := s.GoBack(ctx, k, 3, 1)
		if err != nil || rev != 4 {
			t.Fatalf("go back: %d, %v", rev, err)
		}
		sess, _ := s.Get(ctx, k)
		if sess.StateRev != 4 || sess.State != `{"step": 1}` || sess.LatestRunID != "r_1" {
			t.Fatalf("after going back: %+v", sess)
		}
		if _, err := s.GoBack(ctx, k, 3, 2); !errors.Is(err, ErrConflict) {
			t.Fatalf("a second click from the same page: %v, want a conflict", err)
		}
		// Only the latest MaxSteps are kept; production sessions keep none.
		for i := int64(4); i < 4+MaxSteps+5; i++ {
			if ok, err := s.Advance(ctx, k, i, nil, "r_x"); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		if steps, _ := s.Steps(ctx, k); len(steps) != MaxSteps {
			t.Fatalf("kept %d steps, want %d", len(steps), MaxSteps)
		}
		prod := Production().Key("t_1", "u_1")
		s.Start(ctx, prod, nil, "r_p")
		if steps, _ := s.Steps(ctx, prod); len(steps) != 0 {
			t.Fatalf("a production session kept %d steps", len(steps))
		}
	})
}

// Copy lets the new version's session go on from the old one's: state, latest run and
// files; it is guarded by the target's revision.
func TestCopy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s, from, to := stepsEnv(t, st)
		ctx := context.Background()
		if _, err := s.Copy(ctx, from, to, 0, nil); !errors.Is(err, ErrNoSession) {
			t.Fatalf("copy without a session: %v", err)
		}
		dir, names := files(t, map[string]string{"a.txt": "å", "b.csv": "1,2"})
		if err := s.Replace(ctx, from, dir, names); err != nil {
			t.Fatal(err)
		}
		s.Start(ctx, from, []byte(`{"n": 1}`), "r_1")
		s.Advance(ctx, from, 1, []byte(`{"n": 2}`), "r_2")

		rev, err := s.Copy(ctx, from, to, 0, nil)
		if err != nil || rev != 1 {
			t.Fatalf("copy: %d, %v", rev, err)
		}
		sess, _ := s.Get(ctx, to)
		if sess.State != `{"n": 2}` || sess.LatestRunID != "r_2" {
			t.Fatalf("copied session: %+v", sess)
		}
		got, _, err := s.Files(ctx, to)
		if err != nil || len(got) != 2 {
			t.Fatalf("copied files: %+v, %v", got, err)
		}
		for _, f := range got {
			rc, _, err := s.blobs.Get(ctx, f.Key, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			if want := map[string]string{"a.txt": "å", "b.csv": "1,2"}[f.Name]; string(b) != want {
				t.Fatalf("%s holds %q, want %q", f.Name, b, want)
			}
		}
		// The copies are the target's own: clearing the source leaves them.
		s.Clear(ctx, from)
		if got, _, _ := s.Files(ctx, to); len(got) != 2 {
			t.Fatalf("clearing the source took the copy's files: %d left", len(got))
		}
		// A stale page (revision 0 when the target is at 1) copies nothing.
		s.Advance(ctx, from, 2, []byte(`{"n": 3}`), "r_3")
		if _, err := s.Copy(ctx, from, to, 0, nil); !errors.Is(err, ErrConflict) {
			t.Fatalf("stale copy: %v", err)
		}
		if rev, err := s.Copy(ctx, from, to, 1, nil); err != nil || rev != 2 {
			t.Fatalf("copy over the session: %d, %v", rev, err)
		}
		sess, _ = s.Get(ctx, to)
		if got, _, _ := s.Files(ctx, to); sess.State != `{"n": 3}` || len(got) != 0 {
			t.Fatalf("second copy: %+v, %d files (the source has none now)", sess, len(got))
		}
	})
}
