package textdiff

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"same", "a\nb\n", "a\nb\n", ""},
		{"both empty", "", "", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"added to empty", "", "x\ny\n", "--- old\n+++ new\n@@ -0,0 +1,2 @@\n+x\n+y\n"},
		{"all removed", "x\n", "", "--- old\n+++ new\n@@ -1 +0,0 @@\n-x\n"},
		{"no newline at end", "a\nb", "a\nb\n", "--- old\n+++ new\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"insert at start", "b\nc\n", "a\nb\nc\n", "--- old\n+++ new\n@@ -1,2 +1,3 @@\n+a\n b\n c\n"},
		{"context of three", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nX\n6\n7\n8\n9\n",
			"--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n",
			"--- old\n+++ new\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+Y\n"},
		{"one hunk when close", "1\n2\n3\n4\n5\n6\n7\n8\n", "X\n2\n3\n4\n5\n6\n7\nY\n",
			"--- old\n+++ new\n@@ -1,8 +1,8 @@\n-1\n+X\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n"},
		{"insert at end", "a\n", "a\nb\n", "--- old\n+++ new\n@@ -1 +1,2 @@\n a\n+b\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines, err := Compare(tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if got := Unified("old", "new", lines, 3); got != tc.want {
				t.Errorf("Unified:\n%s\nwant:\n%s", got, tc.want)
			}
			if Changed(lines) != (tc.want != "") {
				t.Errorf("Changed = %v", Changed(lines))
			}
		})
	}
}

// TestShortest checks, on random texts, that Compare's lines give back both texts and
// that its edits are as few as a longest common subsequence allows.
func TestShortest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(string(rune('a' + r.IntN(3))))
			b.WriteByte('\n')
		}
		return b.String()
	}
	for range 2000 {
		a, b := text(), text()
		lines, err := Compare(a, b)
		if err != nil {
			t.Fatal(err)
		}
		var ga, gb strings.Builder
		edits := 0
		for _, l := range lines {
			if l.Kind != Insert {
				ga.WriteString(l.Text + "\n")
			}
			if l.Kind != Delete {
				gb.WriteString(l.Text + "\n")
			}
			if l.Kind != Equal {
				edits++
			}
		}
		if ga.String() != a || gb.String() != b {
			t.Fatalf("%q → %q: lines give back %q → %q", a, b, ga.String(), gb.String())
		}
		if want := len(split(a)) + len(split(b)) - 2*lcs(split(a), split(b)); edits != want {
			t.Fatalf("%q → %q: %d edits, the shortest has %d", a, b, edits, want)
		}
	}
}

func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func TestBounds(t *testing.T) {
	many := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(prefix)
			b.WriteString(strings.Repeat("x", i%7))
			b.WriteString("\n")
		}
		return b.String()
	}
	// A rewrite of more than MaxEdits lines is refused.
	if _, err := Compare(many("a", MaxEdits/2+1), many("b", MaxEdits/2+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("rewrite of %d lines: %v, want ErrTooLarge", MaxEdits+2, err)
	}
	// More than MaxLines different lines is refused before any search.
	if _, err := Compare(many("a", MaxLines+1), "b\n"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("%d lines: %v, want ErrTooLarge", MaxLines+1, err)
	}
	// One change in a text far longer than MaxLines is compared: the common start and
	// end are set aside.
	long := many("a", 3*MaxLines)
	changed := strings.Replace(long, "axxx\n", "CHANGED\n", 1)
	lines, err := Compare(long, changed)
	if err != nil {
		t.Fatal(err)
	}
	if got := Unified("o", "n", lines, 0); got != "--- o\n+++ n\n@@ -4 +4 @@\n-axxx\n+CHANGED\n" {
		t.Errorf("one change in a long text:\n%s", got)
	}
	// Exactly MaxEdits edits still works.
	if _, err := Compare(many("a", MaxEdits/2), many("b", MaxEdits/2)); err != nil {
		t.Errorf("rewrite of %d lines: %v", MaxEdits, err)
	}
}

// FuzzCompare: for any two texts within the bounds, Compare's lines give back both, and
// Unified never panics.
func FuzzCompare(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n")
	f.Add("", "x")
	f.Add("x\r\ny", "x\ny\n")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "0\n2\n3\n4\n5\n6\n7\n8\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		lines, err := Compare(a, b)
		if errors.Is(err, ErrTooLarge) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var ga, gb strings.Builder
		for _, l := range lines {
			end := "\n"
			if l.NoEOL {
				end = ""
			}
			if l.Kind != Insert {
				ga.WriteString(l.Text + end)
			}
			if l.Kind != Delete {
				gb.WriteString(l.Text + end)
			}
		}
		if ga.String() != a || gb.String() != b {
			t.Fatalf("%q → %q: lines give back %q → %q", a, b, ga.String(), gb.String())
		}
		Unified("a", "b", lines, 3)
	})
}
