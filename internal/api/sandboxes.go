package api

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
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
	"github.com/skrip-dev/skrip/internal/store"
)

// sandboxJSON is a sandbox as the API shows it.
type sandboxJSON struct {
	SandboxID    string         `json:"sandbox_id"`
	OwnerID      string         `json:"owner_id"`
	Runner       string         `json:"runner"`
	Status       string         `json:"status"`
	Workspace    string         `json:"workspace"`
	Limits       sandbox.Limits `json:"limits"`
	IdleTimeout  string         `json:"idle_timeout"`
	IdleTimeoutS float64        `json:"idle_timeout_s"`
	CreatedAt    time.Time      `json:"created_at"`
	LastActiveAt time.Time      `json:"last_active_at"`
	ExpiresAt    time.Time      `json:"expires_at"`
}

func toSandboxJSON(b store.Sandbox) sandboxJSON {
	return sandboxJSON{SandboxID: b.ID, OwnerID: b.OwnerID, Runner: b.Runner, Status: "running", Workspace: runner.Workspace,
		Limits: sandbox.LimitsOf(b), IdleTimeout: b.IdleTimeout.String(), IdleTimeoutS: b.IdleTimeout.Seconds(),
		CreatedAt: b.CreatedAt, LastActiveAt: b.LastActiveAt, ExpiresAt: b.ExpiresAt()}
}

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body struct {
		Limits *struct {
			MemoryBytes    int64   `json:"memory_bytes"`
			Pids           int     `json:"pids"`
			CPUs           float64 `json:"cpus"`
			WorkspaceBytes int64   `json:"workspace_bytes"`
		} `json:"limits"`
		IdleTimeout json.RawMessage `json:"idle_timeout"`
	}
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
	httpkit.WriteJSON(w, http.StatusCreated, toSandboxJSON(b))
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
	out := make([]sandboxJSON, 0, len(list))
	for _, b := range list {
		out = append(out, toSandboxJSON(b))
	}
	httpkit.WriteJSON(w, http.StatusOK, map[string]any{"sandboxes": out, "count": len(out)})
	return nil
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request, u store.User) error {
	b, err := s.svc.Sandboxes.Get(r.Context(), u, r.PathValue("id"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, toSandboxJSON(b))
	return nil
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request, u store.User) error {
	if err := s.svc.Sandboxes.Delete(r.Context(), u, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// execJSON is how an exec ended.
type execJSON struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	DurationMS      int64  `json:"duration_ms"`
	TimedOut        bool   `json:"timed_out"`
	OOMKilled       bool   `json:"oom_killed"`
}

// ndjson is the media type of a streamed exec: one JSON object a line.
const ndjson = "application/x-ndjson"

// execSandbox runs a command. With Accept: application/x-ndjson the answer streams: a
// {"stream","line"} object per output line as it comes (as fast as the runner's live
// budget allows), a {"notice"} object where lines were left out or cut, then
// {"result": …}, or {"error": …} when the exec could not run.
func (s *Server) execSandbox(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body struct {
		Cmd      []string `json:"cmd"`
		TimeoutS float64  `json:"timeout_s"`
		Stdin    *string  `json:"stdin"`
	}
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
	if !strings.Contains(r.Header.Get("Accept"), ndjson) {
		res, err := s.svc.Sandboxes.Exec(r.Context(), u, id, req)
		if err != nil {
			return err
		}
		httpkit.WriteJSON(w, http.StatusOK, toExecJSON(res))
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
			w.Header().Set("Content-Type", ndjson)
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
		var msg any = map[string]string{"stream": stream, "line": string(line) + "\n"}
		if stream == runner.Notice {
			msg = map[string]string{"notice": string(line)}
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
		enc.Encode(body)
		return nil
	}
	enc.Encode(map[string]any{"result": toExecJSON(res)})
	return nil
}

func toExecJSON(res runner.ExecResult) execJSON {
	return execJSON{ExitCode: res.ExitCode, Stdout: string(res.Stdout), Stderr: string(res.Stderr),
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		DurationMS: res.Duration.Milliseconds(), TimedOut: res.TimedOut, OOMKilled: res.OOMKilled}
}

// putSandboxFile streams the raw request body into the workspace.
func (s *Server) putSandboxFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	p, n, err := s.svc.Sandboxes.WriteFile(r.Context(), u, r.PathValue("id"), r.PathValue("path"), r.Body)
	if err != nil {
		return s.bodyError(err)
	}
	httpkit.WriteJSON(w, http.StatusCreated, map[string]any{"ok": true, "path": p, "size_bytes": n})
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
	h.Set("Content-Type", partType("", r.PathValue("path")))
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(r.PathValue("path"))}))
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
	var body struct {
		FileKey     string `json:"file_key"`
		Destination string `json:"destination"`
	}
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
	httpkit.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "path": st.Path, "size_bytes": st.Size, "checksum": st.Checksum})
	return nil
}

func (s *Server) publishSandboxFile(w http.ResponseWriter, r *http.Request, u store.User) error {
	var body struct {
		Source  string `json:"source"`
		FileKey string `json:"file_key"`
		TTL     string `json:"ttl"`
	}
	if err := httpkit.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	ttl, err := parseTTL(body.TTL)
	if err != nil {
		return err
	}
	f, err := s.svc.Sandboxes.Publish(r.Context(), u, r.PathValue("id"), sandbox.PublishRequest{Source: body.Source, Key: body.FileKey, TTL: ttl})
	if err != nil {
		return err
	}
	s.ops.Metrics.BytesUploaded.Add(float64(f.Size))
	httpkit.WriteJSON(w, http.StatusOK, struct {
		OK bool `json:"ok"`
		fileJSON
	}{true, toFileJSON(f)})
	return nil
}
