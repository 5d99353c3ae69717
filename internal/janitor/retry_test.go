package janitor

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRetryOnce: a sweep that fails once (the worker registry not answering during a
// NATS leader election, issue 31) is tried again and its second result counts.
func TestRetryOnce(t *testing.T) {
	calls := 0
	n, err := retryOnce(context.Background(), time.Millisecond, func() (int, error) {
		if calls++; calls == 1 {
			return 0, errors.New("reading the worker registry: context deadline exceeded")
		}
		return 2, nil
	})
	if n != 2 || err != nil || calls != 2 {
		t.Fatalf("got %d, %v after %d calls; want 2, nil after 2", n, err, calls)
	}
	calls = 0
	if _, err := retryOnce(context.Background(), time.Millisecond, func() (int, error) { calls++; return 0, errors.New("down") }); err == nil || calls != 2 {
		t.Fatalf("a sweep that fails twice: %v after %d calls; want its error after 2", err, calls)
	}
	calls = 0
	if n, err := retryOnce(context.Background(), time.Hour, func() (int, error) { calls++; return 1, nil }); n != 1 || err != nil || calls != 1 {
		t.Fatalf("a sweep that works: %d, %v after %d calls", n, err, calls)
	}
}
