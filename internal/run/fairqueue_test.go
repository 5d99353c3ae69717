package run

import (
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/store"
)

// TestFairQueueTurns: the pool's queue gives runs out users in turn, whatever order they
// came in. Steps: "+a" queues a run of user a, "-" takes the next run (its user is
// noted), "." ends the oldest run taken and not yet ended.
func TestFairQueueTurns(t *testing.T) {
	for _, c := range []struct {
		name, steps, want string
	}{
		{"all queued first: oldest, then in turn", "+a +a +a +b +c - . - . - . - . - .", "abcaa"},
		{"b after a's first, though a queued 8 before", "+a - +a +a +a +a +a +a +a +b . - . - . -", "abaa"},
		{"fewest running first", "+a +a - - +b +a . -", "aab"},
		{"one user alone, first in first out", "+a +a +a - . - . - .", "aaa"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := newFairQueue()
			at := time.Now()
			var taken []*job
			var got strings.Builder
			for _, s := range strings.Fields(c.steps) {
				switch {
				case strings.HasPrefix(s, "+"):
					at = at.Add(time.Millisecond)
					q.push(&job{run: store.Run{ID: s + at.String(), UserID: s[1:], CreatedAt: at}})
				case s == "-":
					j, ok := q.pop()
					if !ok {
						t.Fatal("pop reported closed")
					}
					taken = append(taken, j)
					got.WriteString(j.run.UserID)
				case s == ".":
					q.done(taken[0])
					taken = taken[1:]
				}
			}
			if got.String() != c.want {
				t.Errorf("served %s; want %s", got.String(), c.want)
			}
		})
	}
}
