package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyUser
)

// requestID returns the id of the request handled under ctx.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

var clientRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// recorder remembers the status and size of a response. Unwrap lets
// http.ResponseController reach Flush and deadlines of the real writer.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += int64(n)
	return n, err
}

func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// observe gives every request an id (the client's X-Request-Id when it is sane), logs one
// line when it ends, counts it by route and code, and turns a panic into a 500.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := r.Header.Get("X-Request-Id")
		if !clientRequestID.MatchString(rid) {
			b := make([]byte, 8)
			rand.Read(b)
			rid = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-Id", rid)
		r = r.WithContext(context.WithValue(r.Context(), keyRequestID, rid))
		rec := &recorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("panic", "request_id", rid, "panic", p)
				if rec.status == 0 {
					s.writeError(rec, r, panicError{p})
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
			s.metrics.Requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
			s.metrics.RequestDuration.WithLabelValues(route).Observe(d.Seconds())
			attrs := []slog.Attr{
				slog.String("request_id", rid), slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.String("route", route), slog.Int("status", status), slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", d),
			}
			if u, ok := userFrom(r.Context()); ok {
				attrs = append(attrs, slog.String("user", u.ID))
			}
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		}()
		next.ServeHTTP(rec, r)
	})
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
