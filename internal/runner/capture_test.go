package runner

import (
	"bytes"
	"strings"
	"testing"
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
	long := &Capture{Max: 1 << 20, OnLine: func(_ string, l []byte) {
		if len(l) > maxLine {
			t.Fatalf("line of %d bytes passed", len(l))
		}
	}}
	long.Write(bytes.Repeat([]byte("x"), 3*maxLine))
	long.Write([]byte("\n"))
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{1 << 30: "1 GiB", 256 << 20: "256 MiB", 3 << 29: "1.5 GiB", 100: "100 B"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
