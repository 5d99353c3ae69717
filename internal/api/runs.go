package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// runOf is run r as viewer sees it: stdout and stderr only to its owner. A stored field
// that cannot be read back is an error, not a silently empty list.
func runOf(r store.Run, viewer store.User) (wire.Run, error) {
	out := wire.Run{RunID: r.ID, ToolID: r.ToolID, VersionID: r.VersionID, UserID: r.UserID, Context: r.Context, Kind: r.Kind,
		Status: r.Status, StateRev: r.StateRev, Attempts: r.Attempts, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Artifacts: []wire.Artifact{}}
	if r.ActionID != "" {
		out.ActionID = &r.ActionID
	}
	if r.ErrorSummary != "" {
		out.ErrorSummary = &r.ErrorSummary
	}
	if r.ErrorSource != "" {
		out.ErrorSource = &r.ErrorSource
	}
	if r.StartedAt != nil && r.FinishedAt != nil {
		d := r.FinishedAt.Sub(*r.StartedAt).Milliseconds()
		out.DurationMS = &d
	}
	var err error
	if out.Inputs, err = run.InputsOf(r); err != nil {
		return wire.Run{}, err
	}
	if out.Outputs, err = run.OutputsOf(r); err != nil {
		return wire.Run{}, err
	}
	if out.NextActions, err = run.NextActionsOf(r); err != nil {
		return wire.Run{}, err
	}
	manifest, err := run.ManifestOf(r)
	if err != nil {
		return wire.Run{}, err
	}
	out.InputManifest.Files = make([]wire.ManifestFile, 0, len(manifest.Files))
	for _, f := range manifest.Files {
		out.InputManifest.Files = append(out.InputManifest.Files, wire.ManifestFile{Name: f.Name, Bytes: f.Bytes})
	}
	arts, err := run.ArtifactsOf(r)
	if err != nil {
		return wire.Run{}, err
	}
	for _, a := range arts {
		out.Artifacts = append(out.Artifacts, wire.Artifact{Path: a.Path, Name: a.Name, Bytes: a.Bytes, SHA256: a.SHA256,
			URL: httpkit.ArtifactURL(r.ID, a.Path), ExpiredAt: a.ExpiredAt})
	}
	if viewer.ID == r.UserID {
		so, se := run.LogText(r.Stdout, r.StdoutTruncated), run.LogText(r.Stderr, r.StderrTruncated)
		out.Stdout, out.Stderr, out.StdoutTruncated, out.StderrTruncated = &so, &se, r.StdoutTruncated, r.StderrTruncated
	}
	return out, nil
}

// parseWait reads a ?wait= duration, capped at 10 minutes.
func parseWait(r *http.Request, def time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return def, nil
	}
	d, err := config.ParseDuration(v)
	if err != nil || d > 10*time.Minute {
		return 0, errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "wait", "value": v}, "wait %q must be a duration of at most 10m, such as 30s", v)
	}
	return d, nil
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, v, err := s.svc.Catalog.Published(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	return s.initialRun(w, r, u, t, v, session.Production())
}

// answerRun waits up to wait for the run, then answers with it: created (201) when it is
// over, 202 when it still runs.
func (s *Server) answerRun(w http.ResponseWriter, r *http.Request, u store.User, runID string, wait time.Duration, done int) error {
	rn, err := s.svc.Runs.Wait(r.Context(), runID, wait)
	if err != nil {
		return err
	}
	status := done
	if !store.Terminal(rn.Status) {
		status = http.StatusAccepted
	}
	return writeRun(w, status, rn, u)
}

// writeRun answers with run rn as viewer sees it.
func writeRun(w http.ResponseWriter, status int, rn store.Run, viewer store.User) error {
	out, err := runOf(rn, viewer)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, status, out)
	return nil
}

// ownRun returns the run in the path if u owns it or is an admin.
func (s *Server) ownRun(r *http.Request, u store.User) (store.Run, error) {
	return s.svc.Runs.Owned(r.Context(), u, r.PathValue("run"))
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, u store.User) error {
	wait, err := parseWait(r, 0)
	if err != nil {
		return err
	}
	rn, err := s.ownRun(r, u)
	if err != nil {
		return err
	}
	if wait > 0 && !store.Terminal(rn.Status) {
		if rn, err = s.svc.Runs.Wait(r.Context(), rn.ID, wait); err != nil {
			return err
		}
	}
	return writeRun(w, http.StatusOK, rn, u)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, u store.User) error {
	q := r.URL.Query()
	query := run.Query{UserID: u.ID, Cursor: q.Get("cursor"), Status: q.Get("status"), Limit: 50}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errs.New(run.ErrInvalidQuery, map[string]any{"field": "limit", "value": v}, "limit %q must be a whole number from 1 to %d", v, run.MaxPage)
		}
		query.Limit = n
	}
	if ref := q.Get("tool"); ref != "" {
		t, err := s.svc.Catalog.Visible(r.Context(), u, ref)
		if err != nil {
			return err
		}
		query.ToolID = t.ID
	}
	page, err := s.svc.Runs.List(r.Context(), u, query)
	if err != nil {
		return err
	}
	out := wire.RunList{Runs: make([]wire.Run, 0, len(page.Runs))}
	for _, rn := range page.Runs {
		j, err := runOf(rn, u)
		if err != nil {
			return err
		}
		out.Runs = append(out.Runs, j)
	}
	out.Count = len(out.Runs)
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request, u store.User) error {
	rn, err := s.ownRun(r, u)
	if err != nil {
		return err
	}
	a, rc, info, err := s.svc.Runs.OpenArtifact(r.Context(), rn, r.PathValue("path"))
	if err != nil {
		return err
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", info.ContentType)
	h.Set("Content-Length", strconv.FormatInt(info.Size, 10))
	h.Set("X-Checksum", "sha256:"+a.SHA256)
	h.Set("ETag", `"`+a.SHA256+`"`)
	httpkit.Download(h, a.Name)
	cw := &countingWriter{ResponseWriter: w}
	if r.Method == http.MethodHead {
		return nil
	}
	_, err = io.Copy(cw, rc)
	s.ops.Metrics.BytesDownloaded.Add(float64(cw.n))
	if err != nil && r.Context().Err() == nil {
		// The status has gone out: cutting the connection is how the client learns the
		// body is not whole (bytes that do not match the recorded checksum end here).
		s.log.LogAttrs(r.Context(), slog.LevelError, "reading a run artifact failed", slog.String("request_id", httpkit.RequestID(r.Context())),
			slog.String("run", rn.ID), slog.String("path", a.Path), slog.String("blob", a.Key), slog.String("error", err.Error()))
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, u store.User) error {
	rn, err := s.ownRun(r, u)
	if err != nil {
		return err
	}
	if _, err := s.svc.Runs.Cancel(r.Context(), rn.ID); err != nil {
		return err
	}
	return s.answerRun(w, r, u, rn.ID, 10*time.Second, http.StatusOK)
}

// runEvents streams a run's status changes and output lines as server-sent events until
// the run is over.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request, u store.User) error {
	rn, err := s.ownRun(r, u)
	if err != nil {
		return err
	}
	// Output lines are the owner's alone (an admin sees the status).
	owner := rn.UserID == u.ID
	past, sub := s.svc.Runs.Subscribe(rn.ID, owner)
	defer sub.Close()
	// Read again after subscribing, so a change in between is not missed.
	if rn, err = s.svc.Runs.Get(r.Context(), rn.ID); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// A client that stops reading is cut off after writeStall, not waited for: its
	// queue is bounded and the run goes on without it.
	send := func(e run.Event) error {
		data, _ := json.Marshal(e.Data)
		rc.SetWriteDeadline(time.Now().Add(writeStall))
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Type, data)
		return err
	}
	flush := func() error {
		rc.SetWriteDeadline(time.Now().Add(writeStall))
		return rc.Flush()
	}
	send(run.Event{Type: "status", Data: rn.Status})
	// A status reaches this node by two paths, the database read above and the event of
	// the change (from this node's hub, or relayed from the node that made it), in
	// either order: each is sent once.
	last := rn.Status
	if store.Terminal(rn.Status) {
		flush()
		return nil
	}
	for _, e := range past {
		if send(e) != nil {
			return nil
		}
	}
	if flush() != nil {
		return nil
	}
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	// Status events between nodes of a cluster can be lost; the database cannot.
	check := time.NewTicker(5 * time.Second)
	defer check.Stop()
	for {
		select {
		case <-check.C:
			if now, err := s.svc.Runs.Get(r.Context(), rn.ID); err == nil && store.Terminal(now.Status) {
				send(run.Event{Type: "status", Data: now.Status})
				flush()
				return nil
			}
		case <-sub.Ready():
			for _, e := range sub.Take() {
				if e.Type == "status" {
					if e.Data == last {
						continue
					}
					last = e.Data
				}
				if send(e) != nil {
					return nil
				}
				if e.Type == "status" && store.Terminal(e.Data) {
					flush()
					return nil
				}
			}
			if flush() != nil {
				return nil
			}
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
			if flush() != nil {
				return nil
			}
		case <-r.Context().Done():
			return nil
		}
	}
}
