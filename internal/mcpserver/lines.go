package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLineBytes is the largest message a client may send on one line: the SDK's own
// bound. A longer line is refused and skipped, never held whole.
const maxLineBytes = mcp.DefaultMaxLineLength

// The SDK's stdio transport ends the session at the first line it cannot decode: bad
// JSON, JSON that is not a JSON-RPC message, a batch it refuses, an over-long line. An
// agent's MCP client would see the server die over one bad message. So the lines pass
// through filterLines first, which answers each such line itself, as JSON-RPC says
// (-32700 for a parse error, -32600 for an invalid request), drops it and reads on; only
// messages the SDK accepts reach it.
//
// Batches (a JSON array of messages) are refused as invalid requests. MCP dropped them
// in 2025-06-18, and the SDK ends the session on many malformed ones (empty, repeated
// ids), which the filter could only avoid by tracking the SDK's requests in flight.

// output serialises writes to the client: the SDK writes each message with one Write
// call, and so does the filter, so messages never interleave. It also counts the calls
// the filter passed to the SDK that the SDK has not answered yet, so that the end of the
// input can wait for their answers (the SDK drops calls in flight when its input ends,
// and a client that pipes its requests and closes stdin would get no answers).
type output struct {
	mu sync.Mutex
	w  io.Writer

	calls   int           // passed to the SDK and not answered yet
	answers chan struct{} // closed and made anew on every answer
}

func newOutput(w io.Writer) *output { return &output{w: w, answers: make(chan struct{})} }

// Write is the SDK's: each of its answers settles one call.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if m, err := jsonrpc.DecodeMessage(bytes.TrimSpace(p)); err == nil {
		if _, ok := m.(*jsonrpc.Response); ok && o.calls > 0 {
			o.calls--
			close(o.answers)
			o.answers = make(chan struct{})
		}
	}
	return o.w.Write(p)
}

// own is the filter's way out: its answers settle no call of the SDK's.
func (o *output) own() io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.w.Write(p)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// called counts a call passed to the SDK.
func (o *output) called() {
	o.mu.Lock()
	o.calls++
	o.mu.Unlock()
}

// settle waits until every call passed to the SDK is answered, or limit has passed.
func (o *output) settle(limit time.Duration) {
	deadline := time.After(limit)
	for {
		o.mu.Lock()
		n, answered := o.calls, o.answers
		o.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-answered:
		case <-deadline:
			return
		}
	}
}

// settleLimit bounds how long the end of the input waits for the answers of calls in
// flight: a sandbox exec may take up to its own timeout.
const settleLimit = 15 * time.Minute

// Close leaves closing the real output to its owner.
func (o *output) Close() error { return nil }

// filtered is what the SDK reads: the lines filterLines passed. Closing it (the SDK does
// when the session ends) also closes the client's input when that can be closed.
type filtered struct {
	*io.PipeReader
	in io.Reader
}

func (f filtered) Close() error {
	f.PipeReader.Close()
	if c, ok := f.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// filterLines copies the valid messages of in, one per line, to pw, answers every other
// line on o, and closes pw when in ends (once the calls passed on are answered) or the
// SDK stops reading.
func filterLines(in io.Reader, pw *io.PipeWriter, o *output) {
	out := o.own()
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(br, maxLineBytes)
		if tooLong {
			if werr := answer(out, nil, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("Invalid Request: the message is larger than %d bytes", maxLineBytes)); werr != nil {
				pw.CloseWithError(werr)
				return
			}
		} else if len(bytes.TrimSpace(line)) > 0 {
			if bad, id, msg := check(line); bad != 0 {
				if werr := answer(out, id, bad, msg); werr != nil {
					pw.CloseWithError(werr)
					return
				}
			} else {
				if m, _ := jsonrpc.DecodeMessage(line); m != nil {
					if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
						o.called()
					}
				}
				if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
				o.settle(settleLimit)
			}
			pw.CloseWithError(err)
			return
		}
	}
}

// readLine returns the next line of br without its line ending, or reports that it was
// longer than limit (and skips the rest of it). err is set at the end of the input,
// possibly with a last line that had no newline.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+2 { // the newline and a \r do not count
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		return line, tooLong, err
	}
}

// check says what is wrong with one line: 0 when the SDK will accept it, else the
// JSON-RPC error code, the request's id when it has a usable one, and the message.
func check(line []byte) (code int, id json.RawMessage, msg string) {
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		return jsonrpc.CodeParseError, nil, "Parse error: the line is not valid JSON: " + err.Error()
	}
	switch v.(type) {
	case map[string]any:
	case []any:
		return jsonrpc.CodeInvalidRequest, nil, "Invalid Request: JSON-RPC batches are not supported; send one message per line"
	default:
		return jsonrpc.CodeInvalidRequest, nil, "Invalid Request: a message must be a JSON object"
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		var m struct {
			Version json.RawMessage `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  json.RawMessage `json:"method"`
		}
		json.Unmarshal(line, &m)
		switch first := firstByte(m.ID); {
		case first == '"' || first == '-' || (first >= '0' && first <= '9'):
			id = m.ID
		case first != 0 && string(m.ID) != "null":
			return jsonrpc.CodeInvalidRequest, nil, "Invalid Request: id must be a string or a number"
		}
		switch {
		case string(m.Version) != `"2.0"`:
			msg = `"jsonrpc" must be "2.0"`
		case m.Method != nil && firstByte(m.Method) != '"':
			msg = "method must be a string"
		case m.Method == nil:
			msg = "a message needs a method, or an id with a result or an error"
		default:
			msg = "not a JSON-RPC 2.0 message"
		}
		return jsonrpc.CodeInvalidRequest, id, "Invalid Request: " + msg
	}
	return 0, nil, ""
}

func firstByte(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// answer writes one JSON-RPC error response to out.
func answer(out io.Writer, id json.RawMessage, code int, msg string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, err := json.Marshal(struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{code, msg}})
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}
