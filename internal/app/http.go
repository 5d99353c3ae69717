package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/skrip-dev/skrip/internal/httpkit"
)

// httpServer is the server Serve runs: the API and web UI behind the HTTP settings.
//   - Header fields must arrive within SKRIP_HTTP_HEADER_TIMEOUT; a body read that gets
//     nothing for SKRIP_HTTP_BODY_IDLE_TIMEOUT fails (the api package applies it per read,
//     so a slow upload that keeps sending is never cut). There is no whole-request
//     timeout, which would cut long uploads.
//   - Requests net/http refuses before any handler runs (header fields over
//     SKRIP_HTTP_MAX_HEADER_BYTES, a malformed request) get the JSON error of docs/spec.md §3, as
//     every other error does: see jsonErrors.
func (a *App) httpServer(ctx context.Context) *http.Server {
	limit := a.cfg.HTTPMaxHeaderBytes
	if limit <= 0 {
		limit = http.DefaultMaxHeaderBytes
	}
	return &http.Server{
		Handler:           handling(a.Handler),
		ReadHeaderTimeout: a.cfg.HTTPHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    int(limit),
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: func(c net.Conn, state http.ConnState) {
			if jc, ok := c.(*jsonErrorConn); ok && state == http.StateIdle {
				jc.handling.Store(false)
			}
		},
	}
}

type connKey struct{}

// handling marks the connection of each request as answered by a handler until it is
// idle again, so jsonErrors never touches a handler's bytes.
func handling(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if jc, ok := r.Context().Value(connKey{}).(*jsonErrorConn); ok {
			jc.handling.Store(true)
		}
		h.ServeHTTP(w, r)
	})
}

// jsonErrors wraps the listener so that the plain-text errors net/http writes itself,
// before any handler (431 for header fields over the limit, 400 for a malformed request,
// 501 and 505), go out as the JSON of docs/spec.md §3. net/http writes each of them as one
// Write of a fixed shape straight on the connection, between requests; a Write of that
// shape while a handler has the connection is the handler's and passes unchanged.
// TestProtocolErrorsAreJSON keeps this in step with net/http.
type jsonErrors struct {
	net.Listener
	maxHeaderBytes int64
}

func (l jsonErrors) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c, maxHeaderBytes: l.maxHeaderBytes}, nil
}

type jsonErrorConn struct {
	net.Conn
	maxHeaderBytes int64
	handling       atomic.Bool
}

// plainError is the shape of net/http's own error answers (server.go, conn.serve).
var plainError = regexp.MustCompile(`(?s)^HTTP/1\.1 (\d{3}) ([^\r\n]*)\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n(.*)$`)

func (c *jsonErrorConn) Write(p []byte) (int, error) {
	if c.handling.Load() || len(p) > 4096 {
		return c.Conn.Write(p)
	}
	m := plainError.FindSubmatch(p)
	if m == nil {
		return c.Conn.Write(p)
	}
	status, _ := strconv.Atoi(string(m[1]))
	body := httpkit.ProtocolError(status, c.message(status, string(m[2]), string(m[3])), c.details(status))
	resp := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
	if _, err := io.WriteString(c.Conn, resp); err != nil {
		return 0, err
	}
	return len(p), nil
}

// message says what net/http refused: its reason is after the status text ("Bad Request:
// missing required Host header") or is the body ("Unsupported transfer encoding").
func (c *jsonErrorConn) message(status int, statusText, body string) string {
	if status == http.StatusRequestHeaderFieldsTooLarge {
		return fmt.Sprintf("the request line and header fields are larger than the server's limit of %d bytes; send fewer or shorter header fields", c.maxHeaderBytes)
	}
	reason := "it is not valid HTTP/1.1"
	if _, after, ok := strings.Cut(statusText, ": "); ok {
		reason = after
	} else if body != "" && body != fmt.Sprintf("%d %s", status, statusText) {
		reason = strings.ToLower(body[:1]) + body[1:]
	}
	return "the server cannot read this request: " + reason
}

func (c *jsonErrorConn) details(status int) map[string]any {
	if status == http.StatusRequestHeaderFieldsTooLarge {
		return map[string]any{"limit_bytes": c.maxHeaderBytes}
	}
	return nil
}

// CloseWrite and ReadFrom keep what net/http finds on a *net.TCPConn: a half-close
// before it drops a refused connection, and sendfile for downloads.
func (c *jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *jsonErrorConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c}, r)
}
