package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// sandboxOf is sandbox b as the API shows it.
func sandboxOf(b store.Sandbox) wire.Sandbox {
	l := sandbox.LimitsOf(b)
	return wire.Sandbox{SandboxID: b.ID, OwnerID: b.OwnerID, Runner: b.Runner, Status: "running", Workspace: runner.Workspace,
		Limits: wire.SandboxLimits{MemoryBytes: l.MemoryBytes, Pids: l.Pids, CPUs: l.CPUs, WorkspaceBytes: l.WorkspaceBytes,
			TmpBytes: l.TmpBytes, LogBytes: l.LogBytes, ExecTimeoutS: l.ExecTimeout},
		IdleTimeout: b.IdleTimeout.String(), IdleTimeoutS: b.IdleTimeout.Seconds(),
		CreatedAt: b.CreatedAt, LastActiveAt: b.LastActiveAt, ExpiresAt: b.ExpiresAt()}
}

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body wire.NewSandbox
	if r.ContentLength != 0 {
		if err := httpkit.DecodeJSON(w, r, &body); err != nil {
			return err
		}
	}
	var req sandbox.CreateRequest
	if l := body.Limits; l != nil {
		req.MemoryBytes, req.Pids, req.CPUs, req.WorkspaceBytes = l.MemoryBytes, l.Pids, l.CPUs, l.WorkspaceBytes
	}
	if len(body.IdleTimeout) > 0 && string(body.IdleTimeout) != "null" {
		d, err := parseIdle(body.IdleTimeout)
		if err != nil {
			return err
		}
		req.IdleTimeout = d
	}
	b, err := s.svc.Sandboxes.Create(r.Context(), u, req)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, sandboxOf(b))
	return nil
}

// parseIdle reads idle_timeout as seconds (a number) or a duration ("30m", "2h").
func parseIdle(raw json.RawMessage) (time.Duration, error) {
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		return time.Duration(secs * float64(time.Second)), nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		if d, err := config.ParseDuration(text); err == nil {
			return d, nil
		}
	}
	return 0, errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "idle_timeout", "value": string(raw)},
		"idle_timeout %s is neither seconds (900) nor a duration such as \"15m\"", raw)
}

func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request, u store.User) error {
	list, err := s.svc.Sandboxes.List(r.Context(), u, r.URL.Query().Get("all") == "true")
	if err != nil {
		return err
	}
	out := wire.SandboxList{Sandboxes: make([]wire.Sandbox, 0, len(list))}
	for _, b := range list {
		out.Sandboxes = append(out.Sandboxes, sandboxOf(b))
	}
	out.Count = len(out.Sandboxes)
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request, u store.User) error {
	b, err := s.svc.Sandboxes.Get(r.Context(), u, r.PathValue("id"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, sandboxOf(b))
	return nil
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request, u store.User) error {
	if err := s.svc.Sandboxes.Delete(r.Context(), u, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// execSandbox runs a command. With Accept: application/x-ndjson the answer streams: a
// {"stream","line"} object per output line as it comes (as fast as the runner's live
// budget allows), a {"notice"} object where lines were left out or cut, then
// {"result": …}, or {"error": …} when the exec could not run.
func (s *Server) execSandbox(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body wire.ExecRequest
	if err := httpkit.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.TimeoutS < 0 {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "timeout_s"}, "timeout_s %g must be above 0", body.TimeoutS)
	}
	req := sandbox.ExecRequest{Cmd: body.Cmd, Timeout: time.Duration(body.TimeoutS * float64(time.Second))}
	if body.Stdin != nil {
		req.Stdin = []byte(*body.Stdin)
	}
	id := r.PathValue("id")
	if !strings.Contains(r.Header.Get("Accept"), wire.ExecNDJSON) {
		res, err := s.svc.Sandboxes.Exec(r.Context(), u, id, req)
		if err != nil {
			return err
		}
		httpkit.WriteJSON(w, http.StatusOK, execResultOf(res))
		return nil
	}
	// A refusal (a bad cmd, an unknown sandbox) comes before any line: a plain error.
	var mu sync.Mutex
	started, finished := false, false
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	rc := http.NewResponseController(w)
	start := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", wire.ExecNDJSON)
			w.Header().Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
		}
	}
	var broken bool // the client stopped reading: the command runs on, its lines go nowhere
	req.OnLine = func(stream string, line []byte) {
		mu.Lock()
		defer mu.Unlock()
		if finished || broken {
			return // a late line of an exec that is over: the response may be gone
		}
		start()
		msg := wire.ExecMessage{Stream: stream, Line: string(line) + "\n"}
		if stream == runner.Notice {
			msg = wire.ExecMessage{Notice: string(line)}
		}
		// The command waits while its client reads, but not for one that stopped.
		rc.SetWriteDeadline(time.Now().Add(writeStall))
		if enc.Encode(msg) != nil || rc.Flush() != nil {
			broken = true
		}
	}
	res, err := s.svc.Sandboxes.Exec(r.Context(), u, id, req)
	mu.Lock()
	defer mu.Unlock()
	finished = true
	if err != nil && !started {
		return err
	}
	start()
	rc.SetWriteDeadline(time.Now().Add(writeStall))
	if err != nil {
		// The status line has gone: the error is the stream's last object, the same
		// body a plain answer would carry.
		_, body := httpkit.ErrorOf(r, s.log, err)
		enc.Encode(wire.ExecMessage{Error: &body.Error})
		return nil
	}
	result := execResultOf(res)
	enc.Encode(wire.ExecMessage{Result: &result})
	return nil
}

// execResultOf is how an exec ended, as the API shows it.
func execResultOf(res runner.ExecResult) wire.ExecResult {
	return wire.ExecResult{ExitCode: res.ExitCode, Stdout: string(res.Stdout), Stderr: string(res.Stderr),
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		DurationMS: res.Duration.Milliseconds(), TimedOut: res.TimedOut, OOMKilled: res.OOMKilled}
}

// putSandboxFile streams the raw request body into the workspace.
func (s *Server) putSandboxFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	p, n, err := s.svc.Sandboxes.WriteFile(r.Context(), u, r.PathValue("id"), r.PathValue("path"), r.Body)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, wire.Written{OK: true, Path: p, SizeBytes: n})
	return nil
}

// getSandboxFile streams a workspace file.
func (s *Server) getSandboxFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	rc, size, err := s.svc.Sandboxes.ReadFile(r.Context(), u, r.PathValue("id"), r.PathValue("path"))
	if err != nil {
		return err
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", staging.GuessType(r.PathValue("path")))
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	httpkit.Download(h, path.Base(r.PathValue("path")))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	n, err := copyWithDeadline(w, rc)
	s.ops.Metrics.BytesDownloaded.Add(float64(n))
	if err != nil {
		// The status is sent: cutting the connection short is how the client learns.
		s.log.Warn("streaming a sandbox file failed", "request_id", httpkit.RequestID(r.Context()), "error", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// writeStall is how long a client may take to accept each piece of a streamed file: the
// sandbox is held while its file streams out.
const writeStall = time.Minute

// copyWithDeadline copies src to w, giving up on a client that stops reading.
func copyWithDeadline(w http.ResponseWriter, src io.Reader) (int64, error) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, rerr := src.Read(buf)
		if k > 0 {
			rc.SetWriteDeadline(time.Now().Add(writeStall))
			if _, err := w.Write(buf[:k]); err != nil {
				return n, err
			}
			n += int64(k)
		}
		if errors.Is(rerr, io.EOF) {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

func (s *Server) stageSandboxFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body wire.StageRequest
	if err := httpkit.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.FileKey == "" {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "file_key"}, "file_key is missing: name a staged file, such as files/f_01J…")
	}
	st, err := s.svc.Sandboxes.Stage(r.Context(), u, r.PathValue("id"), body.FileKey, body.Destination)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, wire.Staged{Checksum: st.Checksum, OK: true, Path: st.Path, SizeBytes: st.Size})
	return nil
}

func (s *Server) publishSandboxFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body wire.PublishRequest
	if err := httpkit.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	cond, err := writeCond(r)
	if err != nil {
		return err
	}
	f, err := s.svc.Sandboxes.Publish(r.Context(), u, r.PathValue("id"), sandbox.PublishRequest{Source: body.Source, Key: body.FileKey, TTL: body.TTL, Cond: cond})
	if err != nil {
		return err
	}
	w.Header().Set("ETag", staging.ETag(f))
	httpkit.WriteJSON(w, http.StatusOK, wire.Published{OK: true, FileInfo: fileOf(f)})
	return nil
}
