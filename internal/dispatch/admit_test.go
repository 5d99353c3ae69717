package dispatch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// TestAdmitCountsAgainBeforeRefusing: the runs Admit let in may be over before its count
// is read again; a client that submits one run after another is not refused on them
// (CI saw the shared executor suite's session test refused when a run ended within
// admitEvery). A full queue is still refused.
func TestAdmitCountsAgainBeforeRefusing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		q := &Queue{st: st, cfg: Config{Queue: 1}}
		for i := range 3 {
			if _, err := q.Admit(ctx); err != nil {
				t.Fatalf("admission %d, with no run in the database: %v", i+1, err)
			}
			time.Sleep(20 * time.Millisecond) // the admitted run has come and gone
		}
		// A run that waits fills the queue.
		now := time.Now()
		u := store.User{ID: ids.New("u"), Name: "ada", Role: store.RoleAuthor, CreatedAt: now}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		tl := store.Tool{ID: ids.New("t"), Slug: "t", Title: "T", AuthorID: u.ID, CreatedAt: now, UpdatedAt: now}
		v := store.ToolVersion{ID: ids.New("v"), ToolID: tl.ID, Source: "x", Entrypoint: "run_tool", CreatedBy: u.ID, CreatedAt: now}
		if _, err := st.CreateTool(ctx, tl, v, true); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateRun(ctx, store.Run{ID: ids.New("r"), ToolID: tl.ID, VersionID: v.ID, UserID: u.ID, Context: "default", Kind: store.KindInitial, Status: store.StatusQueued, Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files": []}`, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(admitEvery)
		if _, err := q.Admit(ctx); !errors.Is(err, run.ErrBusy) {
			t.Fatalf("admission with the queue full = %v; want ErrBusy", err)
		}
	})
}
