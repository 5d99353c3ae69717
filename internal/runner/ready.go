package runner

import (
	"context"
	"sync"
	"time"
)

// ReadyEvery is how long a runner's readiness answer is reused: a flood of /readyz
// costs one check (one sandbox started, or one call to the engine) per period.
const ReadyEvery = 5 * time.Second

// Readiness runs a readiness check at most once per ReadyEvery and answers with its
// last result in between. Callers that come while a check runs wait for it rather than
// start their own.
type Readiness struct {
	Check func(ctx context.Context) error

	mu  sync.Mutex
	at  time.Time
	err error
}

// Ping returns the result of a check at most ReadyEvery old.
func (r *Readiness) Ping(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && time.Since(r.at) < ReadyEvery {
		return r.err
	}
	r.err, r.at = r.Check(ctx), time.Now()
	return r.err
}
