package runner

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"
)

// Notice is the stream name of a message from skrip itself among a process's output
// lines: that lines were left out of the live view, or that a line was cut.
const Notice = "notice"

// LineOverhead is what each line costs against a budget on top of its bytes: the framing
// of the event or object that carries it (SSE, NDJSON) and its bookkeeping. It is what
// makes a flood of empty lines count.
const LineOverhead = 64

// The live view of each stream gets a burst of LiveBurst bytes, then LiveRate bytes a
// second, each line counting LineOverhead more than its length: at most 4096 lines, then
// 1024 a second, of any stream however fast a tool prints. Lines beyond are counted and
// left out, and a notice says how many; the captured log is not affected.
const (
	LiveBurst = 256 << 10
	LiveRate  = 64 << 10
)

// maxLine is the longest line passed on; a longer one is cut, with a notice.
const maxLine = 64 << 10

// Capture keeps the first Max bytes written to it exactly, remembers whether more came,
// and passes complete lines to OnLine as they come (each cut at 64 KiB), as fast as the
// live budget (LiveBurst, LiveRate) allows. Lines past the budget are left out of the
// live view, and OnLine gets a Notice line saying how many, before the next line it
// passes (at most one a second) and at Flush. It never blocks the writer for long and
// never grows past Max plus one line, however much a process prints: past the budget a
// write costs a scan for newlines, not a call per line.
type Capture struct {
	Max    int64
	Stream string
	OnLine func(stream string, line []byte)

	mu        sync.Mutex
	buf       bytes.Buffer
	total     int64
	truncated bool

	line    []byte // the line being read, up to maxLine
	lineLen int64  // its length so far, cut part included

	now      func() time.Time // time.Now; tests set it
	tokens   float64          // live budget left, in bytes
	last     time.Time        // when tokens were last refilled
	started  bool
	dropped  int64     // lines left out since the last notice
	dropSize int64     // their bytes, newlines included
	noticed  time.Time // when the last notice of lines left out went
}

// noticeEvery spaces the notices of lines left out: a steady flood gets one a second,
// not one between every two lines that pass.
const noticeEvery = time.Second

// Write implements io.Writer.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := c.Max - int64(c.buf.Len()); room > 0 {
		c.buf.Write(p[:min(int64(n), room)])
	}
	c.truncated = c.total > c.Max
	if c.OnLine == nil {
		return n, nil
	}
	c.refill()
	// Once a line is left out, so is every line that ends in the rest of p: the budget
	// is refilled only between writes, and scanning on saves a call per line.
	draining := false
	for len(p) > 0 {
		if draining || c.tokens < LineOverhead {
			last := bytes.LastIndexByte(p, '\n')
			if last < 0 {
				c.extend(p)
				break
			}
			k := int64(bytes.Count(p[:last+1], []byte{'\n'}))
			c.dropped += k
			c.dropSize += c.lineLen + int64(last+1)
			c.line, c.lineLen = c.line[:0], 0
			p = p[last+1:]
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.extend(p)
			break
		}
		c.extend(p[:i])
		draining = !c.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// extend adds b to the line being read, keeping at most maxLine bytes of it.
func (c *Capture) extend(b []byte) {
	if room := maxLine - len(c.line); room > 0 {
		c.line = append(c.line, b[:min(len(b), room)]...)
	}
	c.lineLen += int64(len(b))
}

// endLine passes the line just read when the budget allows, and reports whether it did.
func (c *Capture) endLine() bool {
	defer func() { c.line, c.lineLen = c.line[:0], 0 }()
	cost := float64(len(c.line) + LineOverhead)
	if c.tokens < cost {
		c.dropped++
		c.dropSize += c.lineLen + 1
		return false
	}
	c.tokens -= cost
	c.noteDropped(false)
	c.OnLine(c.Stream, c.line)
	if c.lineLen > maxLine {
		c.notice("the line above was %s long; only its first %s are shown", HumanBytes(c.lineLen), HumanBytes(maxLine))
	}
	return true
}

// refill adds to the live budget what the time since the last write earned.
func (c *Capture) refill() {
	if c.now == nil {
		c.now = time.Now
	}
	now := c.now()
	if !c.started {
		c.started, c.tokens, c.last = true, LiveBurst, now
		return
	}
	c.tokens = min(LiveBurst, c.tokens+now.Sub(c.last).Seconds()*LiveRate)
	c.last = now
}

// noteDropped passes a notice of the lines left out since the last one, if any, unless
// one went less than noticeEvery ago (always, with final).
func (c *Capture) noteDropped(final bool) {
	if c.dropped == 0 || (!final && c.last.Sub(c.noticed) < noticeEvery) {
		return
	}
	c.noticed = c.last
	c.notice("%d lines (%s) left out of the live view: they came faster than it follows; the log keeps the first %d bytes of %s",
		c.dropped, HumanBytes(c.dropSize), c.Max, c.Stream)
	c.dropped, c.dropSize = 0, 0
}

func (c *Capture) notice(format string, args ...any) {
	c.OnLine(Notice, []byte(c.Stream+": "+fmt.Sprintf(format, args...)))
}

// Flush passes a last line that had no newline, and a notice of the lines left out.
func (c *Capture) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.OnLine == nil {
		return
	}
	if c.lineLen > 0 {
		c.refill()
		c.endLine()
	}
	c.noteDropped(true)
}

// Bytes returns what was kept and whether anything was cut.
func (c *Capture) Bytes() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes()), c.truncated
}

var _ io.Writer = (*Capture)(nil)
