package runner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCapture(t *testing.T) {
	var lines []string
	c := &Capture{Max: 10, Stream: "stdout", OnLine: func(s string, l []byte) { lines = append(lines, s+":"+string(l)) }}
	for _, w := range []string{"hel", "lo\nwor", "ld\n", "and a very long tail"} {
		if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	c.Flush()
	got, cut := c.Bytes()
	if string(got) != "hello\nworl" || !cut {
		t.Fatalf("Bytes = %q, %v", got, cut)
	}
	if strings.Join(lines, "|") != "stdout:hello|stdout:world|stdout:and a very long tail" {
		t.Fatalf("lines = %q", lines)
	}
	exact := &Capture{Max: 3}
	exact.Write([]byte("abc"))
	if b, cut := exact.Bytes(); string(b) != "abc" || cut {
		t.Fatalf("exactly Max: %q %v", b, cut)
	}
	var seen []string
	long := &Capture{Max: 1 << 20, Stream: "stderr", OnLine: func(s string, l []byte) {
		if len(l) > maxLine {
			t.Fatalf("line of %d bytes passed", len(l))
		}
		seen = append(seen, s+":"+string(l[:min(len(l), 3)]))
	}}
	long.Write(bytes.Repeat([]byte("x"), 3*maxLine))
	long.Write([]byte("\nok\n"))
	long.Flush()
	if want := "stderr:xxx|notice:std|stderr:ok"; strings.Join(seen, "|") != want {
		t.Fatalf("a long line gave %q, want %q", seen, want)
	}
}

// TestCaptureFlood writes floods of empty lines and of one endless line: the log keeps
// exactly its first Max bytes, the live view gets no more lines than its budget allows
// (a burst, then LiveRate a second), and notices account for every line left out.
func TestCaptureFlood(t *testing.T) {
	clock := time.Unix(0, 0)
	var passed, left, calls int64
	var notices []string
	c := &Capture{Max: 200000, Stream: "stdout", now: func() time.Time { return clock }, OnLine: func(s string, l []byte) {
		calls++
		if s == Notice {
			notices = append(notices, string(l))
			var n int64
			fmt.Sscanf(string(l), "stdout: %d lines", &n)
			left += n
			return
		}
		passed++
	}}
	chunk := bytes.Repeat([]byte("\n"), 32<<10)
	const seconds = 10
	for s := 0; s < seconds; s++ {
		for range 32 { // 1 MiB a second
			c.Write(chunk)
		}
		clock = clock.Add(time.Second)
	}
	c.Flush()
	lines := int64(seconds * 32 * len(chunk))
	got, cut := c.Bytes()
	if !bytes.Equal(got, bytes.Repeat([]byte("\n"), 200000)) || !cut {
		t.Fatalf("the log holds %d bytes (cut %v), want exactly the first 200000", len(got), cut)
	}
	if most := int64(LiveBurst/LineOverhead + seconds*LiveRate/LineOverhead); passed > most {
		t.Fatalf("%d lines passed live, the budget allows %d", passed, most)
	}
	if passed+left != lines {
		t.Fatalf("%d lines passed and notices account for %d more; %d were written", passed, left, lines)
	}
	if len(notices) == 0 || !strings.Contains(notices[len(notices)-1], "the log keeps the first 200000 bytes of stdout") {
		t.Fatalf("notices %q", notices)
	}

	// One line of 100 MiB: no call until it ends, then its first 64 KiB and a notice.
	calls, notices = 0, nil
	one := &Capture{Max: 200000, Stream: "stdout", OnLine: func(s string, l []byte) {
		calls++
		if s == Notice {
			notices = append(notices, string(l))
		} else if len(l) != maxLine {
			t.Fatalf("a line of %d bytes passed", len(l))
		}
	}}
	x := bytes.Repeat([]byte("x"), 1<<20)
	for range 100 {
		one.Write(x)
	}
	if calls != 0 {
		t.Fatalf("%d calls before the line ended", calls)
	}
	one.Flush()
	if calls != 2 || !strings.Contains(notices[0], "the line above was 100 MiB long; only its first 64 KiB are shown") {
		t.Fatalf("%d calls, notices %q", calls, notices)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{1 << 30: "1 GiB", 256 << 20: "256 MiB", 3 << 29: "1.5 GiB", 100: "100 B"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
