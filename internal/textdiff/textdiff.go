// Package textdiff compares two texts line by line (Myers' algorithm) and writes the
// difference as a unified diff, or as lines a page sets side by side. It is written
// here because no module skrip already uses has a line diff, and the one needed is
// small; its bounds (MaxLines, MaxEdits) keep a huge or wholly rewritten text from
// taking the server's memory or time: beyond them Compare answers ErrTooLarge.
package textdiff

import (
	"errors"
	"fmt"
	"strings"
)

// Bounds on what Compare takes. The lines the texts share at their start and end do not
// count towards MaxLines, so a small change in a long text is compared all the same.
const (
	// MaxLines is the most lines each text may have once its common start and end are
	// set aside.
	MaxLines = 20000
	// MaxEdits is the most lines removed plus added. Myers' search keeps O(MaxEdits²)
	// numbers, so this bounds its memory (about 16 MB at most) and, with MaxLines, its
	// time.
	MaxEdits = 2000
)

// ErrTooLarge means the texts are beyond MaxLines or MaxEdits.
var ErrTooLarge = errors.New("texts too large to compare")

// Kind says what a Line of a diff is.
type Kind int

// The kinds of line.
const (
	Equal  Kind = iota // in both texts
	Delete             // only in the old text
	Insert             // only in the new text
)

// Line is one line of a diff. Old and New are its 1-based line numbers in the old and
// the new text, 0 where it is not in that text. Text has no line ending; NoEOL says the
// text it comes from ends with it, with no newline after it.
type Line struct {
	Kind     Kind
	Old, New int
	Text     string
	NoEOL    bool
}

// Compare returns the lines of old and new as an edit from old to new: every line of
// both in order, each Equal, Delete or Insert. It answers ErrTooLarge beyond the bounds.
func Compare(old, new string) ([]Line, error) {
	a, b := split(old), split(new)
	// Set aside the common start and end: cheap, and most edits are small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma) > MaxLines || len(mb) > MaxLines {
		return nil, fmt.Errorf("%w: %d and %d lines differ; the limit is %d lines each", ErrTooLarge, len(ma), len(mb), MaxLines)
	}
	ops, err := myers(intern(ma, mb))
	if err != nil {
		return nil, err
	}
	out := make([]Line, 0, len(a)+len(b))
	i, j := 0, 0 // lines of a and b used
	add := func(k Kind) {
		l := Line{Kind: k}
		var s string
		switch k {
		case Equal:
			s, l.Old, l.New = a[i], i+1, j+1
			i, j = i+1, j+1
		case Delete:
			s, l.Old = a[i], i+1
			i++
		case Insert:
			s, l.New = b[j], j+1
			j++
		}
		l.Text, l.NoEOL = strings.CutSuffix(s, "\n")
		l.NoEOL = !l.NoEOL
		out = append(out, l)
	}
	for range pre {
		add(Equal)
	}
	for _, k := range ops {
		add(k)
	}
	for range suf {
		add(Equal)
	}
	return out, nil
}

// split cuts s into lines, each with its "\n" but the last when s does not end with one,
// so "x" and "x\n" differ, as they do for diff(1).
func split(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// intern numbers the distinct lines of a and b, so the search compares numbers.
func intern(a, b []string) ([]int, []int) {
	ids := map[string]int{}
	num := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	return num(a), num(b)
}

// myers returns a shortest edit script from a to b (E. Myers, "An O(ND) Difference
// Algorithm and Its Variations", 1986): for each d it keeps the furthest x reached on
// each diagonal k = x-y, and walks back through those to find the edits.
func myers(a, b []int) ([]Kind, error) {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return nil, nil
	}
	maxD := min(n+m, MaxEdits)
	off := maxD + 1
	v := make([]int32, 2*off+1)
	var trace [][]int32 // trace[d] holds v[k] for k in -d..d after step d
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1]) // down: an insert
			} else {
				x = int(v[off+k-1]) + 1 // right: a delete
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = int32(x)
			if x >= n && y >= m {
				return backtrack(trace, n, m, d), nil
			}
		}
		trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
	}
	return nil, fmt.Errorf("%w: more than %d lines are removed and added", ErrTooLarge, MaxEdits)
}

// backtrack walks from (n, m) back to (0, 0) through trace and returns the edits in
// order.
func backtrack(trace [][]int32, n, m, d int) []Kind {
	var rev []Kind
	x, y := n, m
	for ; d > 0; d-- {
		prev := trace[d-1] // index k+(d-1)
		at := func(k int) int { return int(prev[k+d-1]) }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			rev = append(rev, Equal)
			x, y = x-1, y-1
		}
		if pk == k+1 {
			rev = append(rev, Insert)
		} else {
			rev = append(rev, Delete)
		}
		x, y = px, py
	}
	for ; x > 0; x-- {
		rev = append(rev, Equal)
	}
	out := make([]Kind, len(rev))
	for i, k := range rev {
		out[len(rev)-1-i] = k
	}
	return out
}

// Changed reports whether lines hold an edit.
func Changed(lines []Line) bool {
	for _, l := range lines {
		if l.Kind != Equal {
			return true
		}
	}
	return false
}

// Hunk is a run of changed lines with up to context unchanged lines around them, as a
// unified diff shows it.
type Hunk struct {
	OldStart, OldLines, NewStart, NewLines int
	Lines                                  []Line
}

// Hunks groups lines into hunks with context unchanged lines around each change; two
// changes closer than 2*context lines share a hunk. No change: no hunks.
func Hunks(lines []Line, context int) []Hunk {
	var out []Hunk
	for i := 0; i < len(lines); {
		if lines[i].Kind == Equal {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i // one past the last changed line of the hunk
		for j := i; j < len(lines); j++ {
			if lines[j].Kind != Equal {
				end = j + 1
			} else if j-end >= 2*context {
				break
			}
		}
		stop := min(end+context, len(lines))
		h := Hunk{Lines: lines[start:stop]}
		for _, l := range h.Lines {
			if l.Kind != Insert {
				h.OldLines++
			}
			if l.Kind != Delete {
				h.NewLines++
			}
		}
		h.OldStart, h.NewStart = startOf(lines, start, true), startOf(lines, start, false)
		out = append(out, h)
		i = stop
	}
	return out
}

// startOf is the 1-based number, in the old text (old) or the new one, of the first line
// at or after lines[i] that is in that text; or, when there is none, the number of the
// line before it plus 1.
func startOf(lines []Line, i int, old bool) int {
	num := func(l Line) int {
		if old {
			return l.Old
		}
		return l.New
	}
	for j := i; j < len(lines); j++ {
		if n := num(lines[j]); n > 0 {
			return n
		}
	}
	for j := i - 1; j >= 0; j-- {
		if n := num(lines[j]); n > 0 {
			return n + 1
		}
	}
	return 1
}

// Unified writes lines as a unified diff (diff -u) from oldName to newName with context
// lines of context: "" when nothing changed.
func Unified(oldName, newName string, lines []Line, context int) string {
	hunks := Hunks(lines, context)
	if len(hunks) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", oldName, newName)
	for _, h := range hunks {
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", span(h.OldStart, h.OldLines), span(h.NewStart, h.NewLines))
		for _, l := range h.Lines {
			b.WriteByte(" -+"[l.Kind])
			b.WriteString(l.Text)
			b.WriteByte('\n')
			if l.NoEOL {
				b.WriteString("\\ No newline at end of file\n")
			}
		}
	}
	return b.String()
}

// span is a hunk's range as diff -u writes it: "start,count", "start" for one line, and
// for none the line before it ("start-1,0").
func span(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}
