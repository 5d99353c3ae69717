package httpkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/store"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyUser
	keyCredential
	keyBody
	keyLogSlot
)

// logSlot is what handlers below Observe tell its log line: the user, once WithUser
// knows them. Handlers pass a copy of the request on (r.WithContext), so Observe cannot
// read the user from the request it holds; it reads this slot, which the copies share.
// Only the request's own goroutine writes it, before Observe reads it.
type logSlot struct {
	user *store.User
}

// RequestID returns the id of the request handled under ctx.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

var clientRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// recorder remembers the status and size of a response. Unwrap lets
// http.ResponseController reach Flush and deadlines of the real writer. A response to a
// request whose body failed closes the connection: the rest of that body is never read.
type recorder struct {
	http.ResponseWriter
	body   *body
	status int
	bytes  int64
}

func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
		if rec.body != nil && rec.body.failure() != nil {
			rec.Header().Set("Connection", "close")
		}
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += int64(n)
	return n, err
}

func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// Observe gives every request an id (the client's X-Request-Id when it is sane), logs one
// line to log when it ends, counts it by route and code in m, and turns a panic into a
// 500. A request body that sends nothing for bodyIdle fails (0: never). The log line names
// the client's address as front sees it (through a trusted proxy, the one it names).
func Observe(next http.Handler, log *slog.Logger, m *metrics.Metrics, bodyIdle time.Duration, front Front) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := r.Header.Get("X-Request-Id")
		if !clientRequestID.MatchString(rid) {
			b := make([]byte, 8)
			rand.Read(b)
			rid = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-Id", rid)
		ctx := context.WithValue(r.Context(), keyRequestID, rid)
		slot := &logSlot{}
		ctx = context.WithValue(ctx, keyLogSlot, slot)
		rec := &recorder{ResponseWriter: w}
		if r.Body != nil && r.Body != http.NoBody {
			rec.body = &body{ReadCloser: r.Body, rc: http.NewResponseController(w), idle: bodyIdle}
			r.Body = rec.body
			ctx = context.WithValue(ctx, keyBody, rec.body)
		}
		r = r.WithContext(ctx)
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Error("panic", "request_id", rid, "panic", p)
				if rec.status == 0 {
					WriteError(rec, r, log, panicError{p})
				}
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			d := time.Since(start)
			m.Requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
			m.RequestDuration.WithLabelValues(route).Observe(d.Seconds())
			attrs := []slog.Attr{
				slog.String("request_id", rid), slog.String("method", r.Method), slog.String("path", loggedPath(r)),
				slog.String("route", route), slog.Int("status", status), slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", d), slog.String("client", front.ClientAddr(r)),
			}
			if slot.user != nil {
				attrs = append(attrs, slog.String("user", slot.user.ID))
			}
			log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		}()
		next.ServeHTTP(rec, r)
		rec.body.settle()
	})
}

// loggedPath is the request's path for the log, with the secrets some paths carry (a
// share link's token, an invitation's secret: wildcards named token or secret) cut out,
// so that whoever reads the log cannot use them.
func loggedPath(r *http.Request) string {
	p := r.URL.Path
	for _, name := range []string{"token", "secret"} {
		if v := r.PathValue(name); v != "" {
			p = strings.Replace(p, v, "{"+name+"}", 1)
		}
	}
	return p
}

type panicError struct{ v any }

func (p panicError) Error() string { return "panic: " + toString(p.v) }

func toString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "non-error value"
}

// body is every request's body as handlers see it. A read that gets nothing for idle
// (SKRIP_HTTP_BODY_IDLE_TIMEOUT) fails: the connection's read deadline is pushed out
// before each read, so a slow upload that keeps sending is never cut, while one that
// stalls is. A failed read becomes an error a client can act on, and BodyError makes it
// the request's answer, whatever the handler made of it.
type body struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration

	mu  sync.Mutex
	eof bool
	err error
}

func (b *body) Read(p []byte) (int, error) {
	if b.idle > 0 {
		// A writer without deadlines (a test's recorder) just has no idle limit.
		b.rc.SetReadDeadline(time.Now().Add(b.idle))
	}
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil, errors.Is(err, http.ErrBodyReadAfterClose):
	case errors.Is(err, io.EOF):
		// At the end of the body net/http starts its own read, to see the client hang
		// up; that one must not inherit the deadline.
		b.mu.Lock()
		b.eof = true
		b.mu.Unlock()
		b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Closed while the deadline is past, so that net/http does not wait for the
		// rest of the body after the handler either.
		b.ReadCloser.Close()
		err = b.fail(errs.New(errBodyIdle, map[string]any{"idle_timeout": b.idle.String()},
			"the request body sent nothing for %s, so the server stopped waiting for it; send the request again", b.idle))
	default:
		err = b.fail(errs.New(errBodyRead, nil,
			"the request body ended before it was complete (the upload was interrupted or its framing is broken); send the request again"))
	}
	return n, err
}

// settle bounds what net/http reads of the body once the handler is done: before it
// answers, it reads and drops what the handler left unread (up to 256 KiB), and a client
// that stalls that body must not hold the answer and the connection forever.
func (b *body) settle() {
	if b == nil || b.idle <= 0 {
		return
	}
	b.mu.Lock()
	done := b.eof || b.err != nil
	b.mu.Unlock()
	if !done {
		b.rc.SetReadDeadline(time.Now().Add(b.idle))
	}
}

func (b *body) fail(err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
	}
	return b.err
}

func (b *body) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// BodyError is the error reading r's body hit, or nil. Both the API and the web UI answer
// with it when it is set: a handler's own error is then only its consequence.
func BodyError(r *http.Request) error {
	if b, ok := r.Context().Value(keyBody).(*body); ok {
		return b.failure()
	}
	return nil
}
