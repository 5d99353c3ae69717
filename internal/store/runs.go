package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Run statuses.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusTimedOut  = "timed_out"
	StatusCancelled = "cancelled"
)

// Run kinds: a tool's first run in its context, or a run of an action a run offered.
const (
	KindInitial = "initial"
	KindAction  = "action"
)

// Where a run's error came from (Run.ErrorSource, docs/spec.md §5). Pages and clients
// decide by it, never by the words of the error summary.
const (
	SourceTool   = "tool"   // the tool's own message to its user (a ToolUserError)
	SourceCrash  = "crash"  // an uncaught exception in the tool
	SourceRunner = "runner" // a limit, a timeout, the sandbox, a lost worker, a restart
	SourcePolicy = "policy" // the result broke the contract
	SourceInput  = "input"  // the user's input was refused
)

// IsAction reports whether r runs an action a run offered (KindAction): the web's
// templates ask it rather than compare the kind's text.
func (r Run) IsAction() bool { return r.Kind == KindAction }

// ValidStatus reports whether s is a run status.
func ValidStatus(s string) bool {
	switch s {
	case StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusTimedOut, StatusCancelled:
		return true
	}
	return false
}

// Terminal reports whether a status is final.
func Terminal(status string) bool {
	return status != StatusQueued && status != StatusRunning
}

// Run is one execution of a tool version. The JSON columns hold what the API shows.
type Run struct {
	ID           string
	ToolID       string
	VersionID    string
	UserID       string
	Context      string
	Kind         string // KindInitial or KindAction
	ActionID     string
	ActionLabel  string // the offered action's label when it was submitted; '' for older runs
	Status       string
	ErrorSummary string
	ErrorSource  string // where a failure came from, a Source constant; "" (NULL) when the run did not fail
	// ErrorReason is why skrip's side or the user's input failed the run, as JSON
	// {"code", "params"} (run.Reason), from which a page says it in its language; ""
	// (NULL) when the tool's own message failed it, it did not fail, or it is older.
	ErrorReason   string
	Inputs        string // JSON object
	Outputs       string // JSON array
	NextActions   string // JSON array
	Artifacts     string // JSON array
	InputManifest string // JSON {"files": [...]}
	StateRev      *int64
	Attempts      int64  // how many times the run was claimed to execute; 0 while queued
	Worker        string // the node that claimed it last; '' before a claim
	// ExpectedRev is the session revision an action run was submitted at: when it
	// succeeds, the session moves from it to the next (nil on initial runs).
	ExpectedRev *int64
	// CancelRequested is set when a user cancelled the run while it was running, until
	// the node running it ends it.
	CancelRequested bool
	Stdout          []byte
	Stderr          []byte
	StdoutTruncated bool
	StderrTruncated bool
	CreatedAt       time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	// HeldBytes is what the run holds against its user's quota: while it runs, what its
	// attempt reserved for artifacts (ReserveRunBytes); once recorded, its kept
	// artifacts, outputs and logs (RecordRun); 0 once its artifacts expire or it ends
	// without keeping any.
	HeldBytes int64
}

const runCols = `id, tool_id, version_id, user_id, context, kind, action_id, action_label, status, error_summary, inputs, outputs,
	next_actions, artifacts, input_manifest, state_rev, attempts, worker, expected_rev, cancel_requested, stdout, stderr, stdout_truncated, stderr_truncated,
	created_at, started_at, finished_at, held_bytes, error_source, error_reason`

func scanRun(row interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var rev, expected, started, finished sql.NullInt64
	var created int64
	var source, reason sql.NullString
	if err := row.Scan(&r.ID, &r.ToolID, &r.VersionID, &r.UserID, &r.Context, &r.Kind, &r.ActionID, &r.ActionLabel, &r.Status, &r.ErrorSummary,
		&r.Inputs, &r.Outputs, &r.NextActions, &r.Artifacts, &r.InputManifest, &rev, &r.Attempts, &r.Worker, &expected, &r.CancelRequested, &r.Stdout, &r.Stderr,
		&r.StdoutTruncated, &r.StderrTruncated, &created, &started, &finished, &r.HeldBytes, &source, &reason); err != nil {
		return Run{}, mapErr(err)
	}
	r.CreatedAt = fromMS(created)
	r.ErrorSource, r.ErrorReason = source.String, reason.String
	if rev.Valid {
		r.StateRev = &rev.Int64
	}
	if expected.Valid {
		r.ExpectedRev = &expected.Int64
	}
	if started.Valid {
		t := fromMS(started.Int64)
		r.StartedAt = &t
	}
	if finished.Valid {
		t := fromMS(finished.Int64)
		r.FinishedAt = &t
	}
	return r, nil
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ms(*t)
}

// nullString is s, or NULL when it is empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}

// CreateRun inserts a new run.
func (s *Store) CreateRun(ctx context.Context, r Run) error {
	if _, err := s.exec(ctx, insertRun, runValues(r)...); err != nil {
		return fmt.Errorf("creating run: %w", err)
	}
	return nil
}

// insertRun inserts a run's runCols, from runValues.
var insertRun = `INSERT INTO runs (` + runCols + `) VALUES (?` + strings.Repeat(", ?", strings.Count(runCols, ",")) + `)`

// runValues are r's values in the order of runCols.
func runValues(r Run) []any {
	return []any{r.ID, r.ToolID, r.VersionID, r.UserID, r.Context, r.Kind, r.ActionID, r.ActionLabel, r.Status, r.ErrorSummary, r.Inputs, r.Outputs,
		r.NextActions, r.Artifacts, r.InputManifest, nullInt(r.StateRev), r.Attempts, r.Worker, nullInt(r.ExpectedRev), r.CancelRequested, r.Stdout, r.Stderr, r.StdoutTruncated, r.StderrTruncated,
		ms(r.CreatedAt), nullTime(r.StartedAt), nullTime(r.FinishedAt), r.HeldBytes, nullString(r.ErrorSource), nullString(r.ErrorReason)}
}

// ClaimRun marks run id running as attempt number attempt, claimed by worker (a node
// id). It applies to a queued run, or to a running one whose current attempt is older
// (a run handed to another worker); started_at keeps the first claim's time. It reports
// false when the run is over (cancelled meanwhile), a user asked to cancel it, or it is
// already claimed as attempt or later by another worker: the same claim again (its
// answer was lost) succeeds again.
func (s *Store) ClaimRun(ctx context.Context, id string, attempt int64, worker string, at time.Time) (bool, error) {
	// A new attempt keeps its own artifacts: what an earlier one reserved goes with it.
	// A claimed run's queue message is on the stream, which gives it to the next attempt:
	// the copy the scheduler held (dispatch) is no longer needed.
	res, err := s.exec(ctx, `UPDATE runs SET status = ?, attempts = ?, worker = ?, started_at = COALESCE(started_at, ?),
			held_bytes = CASE WHEN attempts = ? THEN held_bytes ELSE 0 END, dispatch = ''
		WHERE id = ? AND cancel_requested = ? AND (status = ? OR (status = ? AND (attempts < ? OR (attempts = ? AND worker = ?))))`,
		StatusRunning, attempt, worker, ms(at), attempt, id, false, StatusQueued, StatusRunning, attempt, attempt, worker)
	if err != nil {
		return false, fmt.Errorf("claiming run %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SessionEffect is what a succeeded run writes to its session: the session of the run's
// tool, user and context.
type SessionEffect struct {
	// Start writes the session anew at its next revision (an initial run that offers
	// actions). Otherwise the session moves from revision Expected to Expected+1, or
	// stays as it is when another write moved it first.
	Start    bool
	Expected int64
	// State is the session's new state; on a move, "" keeps the state it has.
	State string
}

// RecordRun records how run r ended, as the result of its attempt number attempt, and,
// when eff is set and the run succeeded, applies eff to its session in the same
// transaction. Only a run not yet final whose current attempt that is changes, so a late
// or repeated result of an attempt since claimed again changes neither the run nor its
// session: the session's revision moves once. It reports whether this call recorded the
// run, and the revision it wrote to the session (nil: none, also stored as the run's
// state_rev; r.StateRev is not read).
func (s *Store) RecordRun(ctx context.Context, r Run, attempt int64, eff *SessionEffect) (*int64, bool, error) {
	var rev *int64
	recorded := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// In PostgreSQL the update locks the run's row until the commit, so a second
		// record of the same run waits here and then finds it final.
		res, err := s.txExec(ctx, tx, `UPDATE runs SET status = ?, error_summary = ?, error_source = ?, error_reason = ?, outputs = ?, next_actions = ?, artifacts = ?,
			state_rev = NULL, stdout = ?, stderr = ?, stdout_truncated = ?, stderr_truncated = ?, finished_at = ?, cancel_requested = ?, held_bytes = ?,
			dispatch = '' WHERE id = ? AND status IN (?, ?) AND attempts = ?`,
			r.Status, r.ErrorSummary, nullString(r.ErrorSource), nullString(r.ErrorReason), r.Outputs, r.NextActions, r.Artifacts, r.Stdout, r.Stderr,
			r.StdoutTruncated, r.StderrTruncated, nullTime(r.FinishedAt), false, r.HeldBytes, r.ID, StatusQueued, StatusRunning, attempt)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		recorded = true
		if eff == nil || r.Status != StatusSucceeded {
			return nil
		}
		var at int64
		if r.FinishedAt != nil {
			at = ms(*r.FinishedAt)
		}
		if eff.Start {
			var v int64
			err := s.txQueryRow(ctx, tx, `INSERT INTO tool_sessions (tool_id, user_id, context, state, state_rev, latest_run_id, updated_at)
				VALUES (?, ?, ?, ?, 1, ?, ?)
				ON CONFLICT (tool_id, user_id, context) DO UPDATE SET state = excluded.state,
					state_rev = tool_sessions.state_rev + 1, latest_run_id = excluded.latest_run_id, updated_at = excluded.updated_at
				RETURNING state_rev`, r.ToolID, r.UserID, r.Context, eff.State, r.ID, at).Scan(&v)
			if err != nil {
				return err
			}
			rev = &v
		} else {
			res, err := s.txExec(ctx, tx, `UPDATE tool_sessions SET state = CASE WHEN ? = '' THEN state ELSE ? END,
				state_rev = state_rev + 1, latest_run_id = ?, updated_at = ? WHERE tool_id = ? AND user_id = ? AND context = ? AND state_rev = ?`,
				eff.State, eff.State, r.ID, at, r.ToolID, r.UserID, r.Context, eff.Expected)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return nil // another write to the session won: the run succeeded without a state_rev
			}
			v := eff.Expected + 1
			rev = &v
		}
		_, err = s.txExec(ctx, tx, "UPDATE runs SET state_rev = ? WHERE id = ?", *rev, r.ID)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("recording run %s: %w", r.ID, err)
	}
	if !recorded {
		rev = nil
	}
	return rev, recorded, nil
}

// EndRun ends a run that is not yet final as status with summary, whatever its attempt:
// what a node does when the run's worker was lost. A run it ends as failed or timed out
// failed for the runner's reason (SourceRunner): its workers, its queue; reason is why,
// as Run.ErrorReason holds it. It reports whether it did.
func (s *Store) EndRun(ctx context.Context, id, status, summary, reason string, at time.Time) (bool, error) {
	// It keeps no artifacts: what its attempts reserved is no longer held, nor its queue
	// message (as every final run).
	res, err := s.exec(ctx, "UPDATE runs SET status = ?, error_summary = ?, error_source = ?, error_reason = ?, finished_at = ?, cancel_requested = ?, held_bytes = 0, dispatch = '' WHERE id = ? AND status IN (?, ?)",
		status, summary, nullString(runnerSource(status)), nullString(reason), ms(at), false, id, StatusQueued, StatusRunning)
	if err != nil {
		return false, fmt.Errorf("ending run %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// runnerSource is the error source of a run the runner's side ended as status:
// SourceRunner when it failed or timed out, none when it was cancelled.
func runnerSource(status string) string {
	if status == StatusFailed || status == StatusTimedOut {
		return SourceRunner
	}
	return ""
}

// RequestCancel marks a running run to be cancelled by the node running it, and ends a
// queued one as cancelled at once, reporting whether it did. It returns the run as it is
// after the call; a final run is returned unchanged.
func (s *Store) RequestCancel(ctx context.Context, id, summary string, at time.Time) (Run, bool, error) {
	ended, err := s.CancelQueuedRun(ctx, id, summary, at)
	if err != nil {
		return Run{}, false, fmt.Errorf("cancelling run %s: %w", id, err)
	}
	if _, err := s.exec(ctx, "UPDATE runs SET cancel_requested = ? WHERE id = ? AND status = ?", true, id, StatusRunning); err != nil {
		return Run{}, false, fmt.Errorf("cancelling run %s: %w", id, err)
	}
	r, err := s.GetRun(ctx, id)
	return r, ended, err
}

// DeleteQueuedRun removes a run that is still queued: one that could not be queued after
// all. It reports whether it did.
func (s *Store) DeleteQueuedRun(ctx context.Context, id string) (bool, error) {
	res, err := s.exec(ctx, "DELETE FROM runs WHERE id = ? AND status = ?", id, StatusQueued)
	if err != nil {
		return false, fmt.Errorf("removing run %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// CancelQueuedRun ends a run that is still queued as cancelled; it reports whether it did.
func (s *Store) CancelQueuedRun(ctx context.Context, id, summary string, at time.Time) (bool, error) {
	res, err := s.exec(ctx, "UPDATE runs SET status = ?, error_summary = ?, finished_at = ?, dispatch = '' WHERE id = ? AND status = ?",
		StatusCancelled, summary, ms(at), id, StatusQueued)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// GetRun returns a run.
func (s *Store) GetRun(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(s.queryRow(ctx, "SELECT "+runCols+" FROM runs WHERE id = ?", id))
	if err != nil {
		return Run{}, fmt.Errorf("run %q: %w", id, err)
	}
	return r, nil
}

// RunFilter selects runs; an empty field selects all.
type RunFilter struct {
	UserID string
	ToolID string
	Status string
	Before string // only runs with an id before this one: the next page
	Limit  int
}

// ListRuns returns up to f.Limit runs that f selects, newest first.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	q := "SELECT " + runCols + " FROM runs WHERE (? = '' OR user_id = ?) AND (? = '' OR tool_id = ?) AND (? = '' OR status = ?) AND (? = '' OR id < ?) ORDER BY id DESC LIMIT ?"
	rows, err := s.query(ctx, q, f.UserID, f.UserID, f.ToolID, f.ToolID, f.Status, f.Status, f.Before, f.Before, f.Limit)
	return scanAll(rows, err, scanRun)
}

// FailUnfinishedRuns marks every queued or running run failed with summary: what a
// restart finds after a crash, so the runner's (SourceRunner), for reason (as
// Run.ErrorReason holds it). It returns how many it marked.
func (s *Store) FailUnfinishedRuns(ctx context.Context, summary, reason string, at time.Time) (int64, error) {
	res, err := s.exec(ctx, "UPDATE runs SET status = ?, error_summary = ?, error_source = ?, error_reason = ?, finished_at = ?, held_bytes = 0, dispatch = '' WHERE status IN (?, ?)",
		StatusFailed, summary, SourceRunner, nullString(reason), ms(at), StatusQueued, StatusRunning)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// RunArtifacts is a run's status and artifacts JSON, for finding the blobs it refers to.
type RunArtifacts struct {
	ID        string
	Status    string
	Artifacts string // JSON array
}

// RunArtifactsOf returns run id's status and artifacts, or ErrNotFound.
func (s *Store) RunArtifactsOf(ctx context.Context, id string) (RunArtifacts, error) {
	r := RunArtifacts{ID: id}
	err := s.queryRow(ctx, "SELECT status, artifacts FROM runs WHERE id = ?", id).Scan(&r.Status, &r.Artifacts)
	if err != nil {
		return RunArtifacts{}, fmt.Errorf("run %q: %w", id, mapErr(err))
	}
	return r, nil
}

// RunsWithStoredArtifacts returns up to limit runs that finished before cutoff and whose
// artifacts still name a blob (a "key" in the JSON), in id order after the id after.
func (s *Store) RunsWithStoredArtifacts(ctx context.Context, cutoff time.Time, after string, limit int) ([]RunArtifacts, error) {
	rows, err := s.query(ctx, `SELECT id, status, artifacts FROM runs WHERE finished_at < ? AND id > ? AND artifacts LIKE ?
		ORDER BY id LIMIT ?`, ms(cutoff), after, `%"key":"runs/%`, limit)
	return scanAll(rows, err, func(row interface{ Scan(...any) error }) (RunArtifacts, error) {
		var r RunArtifacts
		return r, row.Scan(&r.ID, &r.Status, &r.Artifacts)
	})
}

// ReplaceRunArtifacts sets a run's artifacts JSON to next if it is still old; it reports
// whether it did.
func (s *Store) ReplaceRunArtifacts(ctx context.Context, id, old, next string) (bool, error) {
	// The expired artifacts, and the record kept with them, no longer count (held_bytes).
	res, err := s.exec(ctx, "UPDATE runs SET artifacts = ?, held_bytes = 0 WHERE id = ? AND artifacts = ?", next, id, old)
	if err != nil {
		return false, fmt.Errorf("run %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// RecentSources returns the sources of the tool versions that the last n runs ran, each
// once: what a runner parks interpreters for at start (warm starts). Run ids sort by
// creation, so the primary key finds the last n without a scan.
func (s *Store) RecentSources(ctx context.Context, n int) ([]string, error) {
	rows, err := s.query(ctx, `SELECT v.source FROM tool_versions v
		WHERE v.id IN (SELECT version_id FROM (SELECT version_id FROM runs ORDER BY id DESC LIMIT ?) last)`, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var src string
		if err := rows.Scan(&src); err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, rows.Err()
}
