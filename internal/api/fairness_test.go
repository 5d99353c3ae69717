package api_test

import (
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestRunsPerUserAndTurns: one user who sends 70 runs at once gets exactly
// SKRIP_RUNS_PER_USER (8) of them admitted and 429 rate_limited with Retry-After for the
// rest, while another user is still admitted; and with one worker slot, the other
// user's run starts right after the first user's first run, not after all eight (the
// probe of issue 28: one user's queue blocked everyone). On each database, and on a
// cluster's API node, whose runs wait in PostgreSQL for the scheduler.
func TestRunsPerUserAndTurns(t *testing.T) {
	apptest.EachOf(t, append(apptest.Backends, apptest.ClusterBackend), func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.RunnerConcurrency, cfg.RunnerQueue = 1, 64
		env := apptest.Start(t, cfg)
		publish(t, env, "sleep", sleepTool)
		_, ada := env.User(t, "ada", "user")
		_, bo := env.User(t, "bo", "user")

		var mu sync.Mutex
		var admitted []string
		refused := 0
		var wg sync.WaitGroup
		for range 70 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each run lasts 3 s, so that none ends (and frees a place) while the 70
				// are still being admitted on a loaded machine.
				a := runUpload(t, env, ada.Token, "sleep", nil, nil, `{"s": 3}`, "?wait=0s")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case a.status == 202:
					admitted = append(admitted, a.body["run_id"].(string))
				case a.status == 429 && a.errCode() == "rate_limited" && a.header.Get("Retry-After") != "" &&
					strings.Contains(a.errMessage(), "8 runs"):
					details, _ := a.body["error"].(map[string]any)["details"].(map[string]any)
					if details["reason"] != "runs_per_user" || details["limit"] != float64(8) {
						t.Errorf("details of a refusal: %v", details)
					}
					refused++
				default:
					t.Errorf("a run past the cap: %d %s (Retry-After %q)", a.status, a.raw, a.header.Get("Retry-After"))
				}
			}()
		}
		wg.Wait()
		if len(admitted) != 8 || refused != 62 {
			t.Fatalf("70 runs at once: %d admitted, %d refused; want 8 and 62", len(admitted), refused)
		}
		other := runUpload(t, env, bo.Token, "sleep", nil, nil, `{"s": 1}`, "?wait=0s")
		if other.status != 202 {
			t.Fatalf("another user's run while the first is at the cap: %d %s", other.status, other.raw)
		}

		type started struct {
			at   time.Time
			user string
		}
		var order []started
		for _, id := range append(admitted, other.body["run_id"].(string)) {
			a := send(t, env, "GET", "/api/v1/runs/"+id+"?wait=60s", env.AdminToken, "", nil)
			if a.body["status"] != "succeeded" {
				t.Fatalf("run %s: %s", id, a.raw)
			}
			at, err := time.Parse(time.RFC3339Nano, a.body["started_at"].(string))
			if err != nil {
				t.Fatal(err)
			}
			user := "ada"
			if a.body["user_id"] == other.body["user_id"] {
				user = "bo"
			}
			order = append(order, started{at, user})
		}
		sort.Slice(order, func(i, j int) bool { return order[i].at.Before(order[j].at) })
		var users []string
		for _, o := range order {
			users = append(users, o.user)
		}
		if users[1] != "bo" {
			t.Errorf("the runs started in the order %v; want bo's second, right after ada's first", users)
		}
		// Her runs over, ada may run again.
		if a := runUpload(t, env, ada.Token, "sleep", nil, nil, `{"s": 0}`, "?wait=0s"); a.status != 202 {
			t.Errorf("a run after the others ended: %d %s", a.status, a.raw)
		}
	})
}
