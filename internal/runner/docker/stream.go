package docker

// This file reads an attached exec's stream: stdout and stderr capped, and the
// supervisor's end marker taken out of stderr.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/moby/api/pkg/stdcopy"

	"github.com/skrip-dev/skrip/internal/runner"
)

// output reads an attached exec's stream: stdout and stderr captured (logBytes of each
// kept, lines to onLine), the supervisor's end marker taken out of stderr and sent on
// done, and streamed closed when the stream ends.
type output struct {
	stdout, stderr *runner.Capture
	done           chan ending
	streamed       chan struct{}
}

// readOutput starts copying src, an attached stream, into a new output and returns it.
func readOutput(src io.Reader, token string, logBytes int64, onLine func(stream string, line []byte)) *output {
	o := &output{
		stdout:   &runner.Capture{Max: logBytes, Stream: "stdout", OnLine: onLine},
		stderr:   &runner.Capture{Max: logBytes, Stream: "stderr", OnLine: onLine},
		done:     make(chan ending, 1),
		streamed: make(chan struct{}),
	}
	marker := &markerWriter{next: o.stderr, token: []byte("\n" + token + " "), done: o.done}
	go func() {
		stdcopy.StdCopy(o.stdout, marker, src)
		close(o.streamed)
	}()
	return o
}

// into puts what was captured into res; call it once the stream has ended or been cut.
func (o *output) into(res *runner.ExecResult) {
	o.stdout.Flush()
	o.stderr.Flush()
	res.Stdout, res.StdoutTruncated = o.stdout.Bytes()
	res.Stderr, res.StderrTruncated = o.stderr.Bytes()
}

// markerWriter passes stderr through until the supervisor's marker line, whose exit code
// it sends on done; the marker itself never reaches the run's stderr.
type markerWriter struct {
	mu    sync.Mutex
	next  io.Writer
	token []byte
	buf   []byte
	done  chan ending
	seen  bool
}

// ending is what the supervisor reports when the tool's process is over.
type ending struct {
	code     int
	oomKills int
}

func (m *markerWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen {
		return len(p), nil
	}
	m.buf = append(m.buf, p...)
	if i := bytes.Index(m.buf, m.token); i >= 0 {
		if end := bytes.IndexByte(m.buf[i+len(m.token):], '\n'); end >= 0 {
			var e ending
			fields := strings.Fields(string(m.buf[i+len(m.token) : i+len(m.token)+end]))
			if len(fields) > 0 {
				e.code, _ = strconv.Atoi(fields[0])
			}
			if len(fields) > 1 {
				e.oomKills, _ = strconv.Atoi(fields[1])
			}
			m.next.Write(m.buf[:i])
			m.seen = true
			m.done <- e
			return len(p), nil
		}
		return len(p), nil // the marker is not complete yet
	}
	// Keep a tail that may be the start of the marker; pass the rest on.
	keep := len(m.token)
	if len(m.buf) > keep {
		m.next.Write(m.buf[:len(m.buf)-keep])
		m.buf = append(m.buf[:0], m.buf[len(m.buf)-keep:]...)
	}
	return len(p), nil
}

// randomToken returns a fresh unguessable token: the end marker of a run or exec, which a
// tool cannot forge, and the name of a partial file in a sandbox.
func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "skrip-done-" + hex.EncodeToString(b)
}
