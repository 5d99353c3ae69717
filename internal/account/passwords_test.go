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

// TestThrottleBurst: failures counted at one moment (checks that were in flight together
// when the bucket ran out) give one wait, not one each: a flood that ends leaves its
// victim a short wait.
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

// TestThrottleInFlight: a check in flight holds one of its key's free failures, so with
// 3 free only 3 checks begin together, and a 4th is refused (for the 2s the wait would be
// if they fail) while they run; their failures start the wait; once it is over one check
// begins and no other until it ends (refused for the next wait, 4s, then 8s); a success forgets the
// key, and a check that was in flight across it counts afresh; a check's end leaves no
// count in flight.
func TestThrottleInFlight(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	th := newThrottle(100, time.Minute)
	k := []key{{by: "address", id: "a 192.0.2.1", free: 20}, {by: "name", id: "n ada", free: 3}}
	begin := func(wantWait time.Duration) *attempt {
		t.Helper()
		a, d, by := th.begin(now, k)
		if d != wantWait || (a == nil) != (wantWait > 0) {
			t.Fatalf("begin = %v, %v by %q; want a wait of %v", a, d, by, wantWait)
		}
		if d > 0 && by != "name" {
			t.Fatalf("refused by %q, want name", by)
		}
		return a
	}
	var held []*attempt
	for range 3 {
		held = append(held, begin(0))
	}
	begin(2 * time.Second)
	th.end(now, held[0], checkFailed)
	begin(2 * time.Second) // 2 free left, both held
	th.end(now, held[1], checkFailed)
	th.end(now, held[2], checkFailed)
	begin(2 * time.Second) // none left: the wait

	now = now.Add(2 * time.Second)
	paid := begin(0)
	begin(4 * time.Second) // one at a time past the free ones
	begin(4 * time.Second)
	th.end(now, paid, checkFailed)
	begin(4 * time.Second)

	now = now.Add(4 * time.Second)
	a, b := begin(0), begin(8*time.Second) // and it would be 8s
	th.end(now, a, checkPassed)
	if len(th.entries) != 0 {
		t.Fatalf("a success left %d entries", len(th.entries))
	}
	a, b = begin(0), begin(0)
	th.end(now, b, checkFailed)
	th.end(now, a, checkFailed)
	for id, el := range th.entries {
		if r := el.Value.(*record); r.inflight != 0 {
			t.Errorf("%s: %d in flight after every check ended", id, r.inflight)
		}
	}
	if d, _ := th.wait(now, k); d != 0 {
		t.Errorf("2 failures of 3 free after the success: wait %v, want none", d)
	}
}
