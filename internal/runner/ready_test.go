package runner

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestReadinessChecksOncePerPeriod asks a hundred times at once, as a flood of /readyz
// would: the check runs once, and everyone gets its answer.
func TestReadinessChecksOncePerPeriod(t *testing.T) {
	var mu sync.Mutex
	checks := 0
	broken := errors.New("broken")
	r := Readiness{Check: func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		checks++
		return broken
	}}
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Ping(context.Background()); !errors.Is(err, broken) {
				t.Errorf("Ping = %v, want the check's error", err)
			}
		}()
	}
	wg.Wait()
	if checks != 1 {
		t.Fatalf("%d checks for 100 pings within %s, want 1", checks, ReadyEvery)
	}
}
