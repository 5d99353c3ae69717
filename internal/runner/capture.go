package runner

import (
	"bytes"
	"io"
	"sync"
)

// Capture keeps the first Max bytes written to it, remembers whether more came, and
// passes complete lines (each cut at 64 KiB) to OnLine. It never blocks the writer for
// long and never grows past Max, however much a run prints.
type Capture struct {
	Max    int64
	Stream string
	OnLine func(stream string, line []byte)

	mu        sync.Mutex
	buf       bytes.Buffer
	total     int64
	line      []byte
	truncated bool
}

const maxLine = 64 << 10

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
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		end := i
		if i < 0 {
			end = len(p)
		}
		if room := maxLine - len(c.line); room > 0 {
			c.line = append(c.line, p[:min(end, room)]...)
		}
		if i < 0 {
			break
		}
		c.OnLine(c.Stream, c.line)
		c.line = c.line[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Flush passes a last line that had no newline.
func (c *Capture) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.OnLine != nil && len(c.line) > 0 {
		c.OnLine(c.Stream, c.line)
		c.line = c.line[:0]
	}
}

// Bytes returns what was kept and whether anything was cut.
func (c *Capture) Bytes() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes()), c.truncated
}

var _ io.Writer = (*Capture)(nil)
