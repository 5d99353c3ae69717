package account

import (
	"fmt"
	"testing"
	"time"
)

// TestThrottleDelays: the free failures pass, then each failure's wait doubles from 2s up
// to the most; the wait is over once its time has passed; when the failures stop long
// enough for the free ones to come back the key is forgotten; a reset forgets it at once.
func TestThrottleDelays(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	th := newThrottle(100, 10*time.Second)
	k := []key{{by: "name", id: "n ada", free: 3}}
	now := t0
	for i := range 2 {
		th.fail(now, k)
		if d, _ := th.wait(now, k); d != 0 {
			t.Fatalf("after free failure %d the wait is %v", i+1, d)
		}
	}
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		th.fail(now, k)
		d, by := th.wait(now, k)
		if d != want || by != "name" {
			t.Fatalf("after failure %d past the free ones the wait is %v by %q, want %v by name", i+1, d, by, want)
		}
		now = now.Add(d)
		if d, _ := th.wait(now, k); d != 0 {
			t.Fatalf("the wait is not over at its end: %v left", d)
		}
	}
	// Three minutes of quiet bring the three free failures back: forgotten.
	now = now.Add(3 * freeFailureBack)
	if d, _ := th.wait(now, k); d != 0 || len(th.entries) != 0 {
		t.Fatalf("after the quiet: wait %v, %d entries", d, len(th.entries))
	}
	for range 3 {
		th.fail(now, k)
	}
	if d, _ := th.wait(now, k); d != 2*time.Second {
		t.Fatalf("after the quiet the waits did not start over: %v", d)
	}
	th.reset(k)
	if d, _ := th.wait(now, k); d != 0 || len(th.entries) != 0 {
		t.Fatalf("after a reset: wait %v, %d entries", d, len(th.entries))
	}
}

// TestThrottleBounded: however many names and addresses fail, the throttle remembers at
// most its number of entries, forgetting those that failed least recently.
func TestThrottleBounded(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	th := newThrottle(50, time.Minute)
	hot := []key{{by: "address", id: "a 192.0.2.1", free: 1}}
	for i := range 10_000 {
		th.fail(now, []key{{by: "name", id: fmt.Sprintf("n user%d", i), free: 1}})
		if i%10 == 0 {
			th.fail(now, hot) // failing again keeps it among the most recent
		}
		if len(th.entries) > 50 || th.lru.Len() != len(th.entries) {
			t.Fatalf("after %d names: %d entries, %d in the list", i+1, len(th.entries), th.lru.Len())
		}
	}
	if d, _ := th.wait(now, hot); d == 0 {
		t.Error("the address failing all along was forgotten")
	}
	if d, _ := th.wait(now, []key{{by: "name", id: "n user0", free: 1}}); d != 0 {
		t.Error("the oldest name is still remembered")
	}
}

// TestSignInKeys: an IPv6 client counts by its /64, an IPv4 one (mapped or not) by its
// address, and a name by at most 64 bytes.
func TestSignInKeys(t *testing.T) {
	s := &Service{limits: Limits{}.withDefaults()}
	for _, tc := range []struct{ client, name, addr, nameKey string }{
		{"192.0.2.7", "ada", "a 192.0.2.7", "n ada"},
		{"::ffff:192.0.2.7", "ada", "a 192.0.2.7", "n ada"},
		{"2001:db8:1:2:3:4:5:6", "ada", "a 2001:db8:1:2::/64", "n ada"},
		{"2001:db8:1:2:ffff::1", "ada", "a 2001:db8:1:2::/64", "n ada"},
		{"not an address", string(make([]byte, 100)), "a not an address", "n " + string(make([]byte, 64))},
	} {
		k := s.signInKeys(tc.client, tc.name)
		if k[0].id != tc.addr || k[1].id != tc.nameKey {
			t.Errorf("signInKeys(%q, …) = %q, %q; want %q, %q", tc.client, k[0].id, k[1].id, tc.addr, tc.nameKey)
		}
	}
}

// TestThrottleBurst: failures that arrive together (let in before the first of them
// failed) give one wait, not one each: a flood that ends leaves its victim a short wait.
func TestThrottleBurst(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	th := newThrottle(100, time.Minute)
	k := []key{{by: "name", id: "n ada", free: 5}}
	for range 300 {
		th.fail(now, k)
	}
	if d, _ := th.wait(now, k); d != 2*time.Second {
		t.Fatalf("after a burst of 300 the wait is %v, want 2s", d)
	}
}
