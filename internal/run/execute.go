package run

import (
	"context"
	"errors"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runjob"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// A run's job and its report are runjob's: a worker executes them too, without the
// database.
type (
	Job       = runjob.Job
	Report    = runjob.Report
	Collector = runjob.Collector
)

// Why a worker stopped a run early.
const (
	StopCancelled = runjob.StopCancelled
	StopShutdown  = runjob.StopShutdown
)

// judge turns a worker's report on run r into how the run ended. The tool's result.json
// is parsed and checked here, against policy, on the node that records the run; so is
// where a failure came from (store.Run.ErrorSource): a worker's report carries only what
// happened (its own failure, a limit hit, the result.json the tool left), never a verdict.
func judge(r store.Run, rep Report, policy contract.Policy) outcome {
	lim := rep.Limits
	res := rep.Result
	out := outcome{status: store.StatusFailed}
	switch {
	case rep.Failure != "":
		return failed(rep.Failure, store.SourceRunner, reason(ReasonSandbox))
	case rep.Stopped == StopCancelled || r.CancelRequested:
		out = outcome{status: store.StatusCancelled, summary: "cancelled"}
	case rep.Stopped == StopShutdown:
		out = outcome{status: store.StatusCancelled, summary: "cancelled: the server shut down"}
	case res.TimedOut:
		out = outcome{status: store.StatusTimedOut, summary: runner.TimedOut(lim.WallTime), source: store.SourceRunner,
			reason: reason(ReasonTimedOut, "limit", itoa(int64(lim.WallTime.Seconds())))}
	case res.OOMKilled:
		out.summary, out.source = runner.MemoryExceeded(lim.MemoryBytes), store.SourceRunner
		out.reason = reason(ReasonMemory, "limit", runner.HumanBytes(lim.MemoryBytes))
	case res.ResultJSON == nil:
		out.summary, out.source = contract.NoResultSummary(res.ExitCode), store.SourcePolicy
		out.reason = reason(ReasonNoResult, "exit_code", itoa(int64(res.ExitCode)))
	default:
		parsed, perr := contract.ParseResult(res.ResultJSON, policy)
		if perr != nil {
			out.summary, out.source, out.reason = contract.ViolationSummary(perr), store.SourcePolicy, reason(ReasonViolation)
			break
		}
		out = outcome{status: parsed.Status, summary: parsed.ErrorSummary, source: resultSource(parsed), reason: resultReason(parsed),
			outputs: parsed.Outputs, actions: parsed.NextActions, session: SessionEffect(r, parsed)}
	}
	out.outputs = append(out.outputs, rep.Notices...)
	if res.LeftOut.Count > 0 {
		out.outputs = append(out.outputs, leftOutNotice(lim.OutputBytes, res.LeftOut))
	}
	out.artifacts = rep.Artifacts
	if out.status == store.StatusFailed && !isEditor(r) {
		// As in the original hub, a failed run keeps no artifacts: what a tool left
		// half-done is no result for its user. The editor keeps them for the author.
		out.discard, out.artifacts = rep.Artifacts, nil
	}
	out.result = &res
	return out
}

// resultSource is where the error of a result that keeps to the contract came from, as
// its result.json says: the tool's own message, or a crash; none when it succeeded.
func resultSource(res contract.Result) string {
	switch {
	case res.Status != contract.StatusFailed:
		return ""
	case res.ErrorSource == contract.SourceCrash:
		return store.SourceCrash
	case res.ErrorSource == contract.SourceInput:
		return store.SourceInput
	}
	return store.SourceTool
}

// resultReason is why a result that keeps to the contract failed, when its words are
// skrip's (a crash, whose summary the shim writes) or name a field of the user's input;
// none for the tool's own message, which the page shows as it is.
func resultReason(res contract.Result) Reason {
	switch {
	case res.Status != contract.StatusFailed:
		return Reason{}
	case res.ErrorSource == contract.SourceCrash:
		return reason(ReasonCrash)
	case res.ErrorSource == contract.SourceInput:
		return reason(ReasonInput, "field", res.ErrorField)
	}
	return Reason{}
}

// isEditor reports whether r ran in the editor sandbox.
func isEditor(r store.Run) bool {
	c, err := session.ParseContext(r.Context)
	return err == nil && c.IsEditor()
}

// Claim marks run id running as attempt number attempt on worker, and tells the run's
// subscribers. It reports false when the run is not to be run: over, cancelled, or
// already claimed as that attempt or a later one.
func (s *Service) Claim(ctx context.Context, id string, attempt int64, worker string) (bool, error) {
	ok, err := s.st.ClaimRun(ctx, id, attempt, worker, s.now())
	if ok {
		s.status(id, store.StatusRunning)
	}
	return ok, err
}

// Record records rep as the result of attempt number attempt of run id, with what a
// success writes to the run's session, in one transaction. It reports false when the
// run was already recorded, or is held by a later attempt: a late or repeated report
// changes nothing.
func (s *Service) Record(ctx context.Context, id string, attempt int64, rep Report) (bool, error) {
	r, err := s.st.GetRun(ctx, id)
	if err != nil {
		return false, err
	}
	if store.Terminal(r.Status) || r.Attempts != attempt {
		return false, nil
	}
	return s.record(ctx, r, attempt, judge(r, rep, s.cfg.Policy))
}

// record stores how run r ended as attempt, and tells its subscribers.
func (s *Service) record(ctx context.Context, r store.Run, attempt int64, out outcome) (bool, error) {
	fin := s.now()
	r.Status, r.ErrorSummary, r.ErrorSource, r.ErrorReason, r.FinishedAt = out.status, out.summary, out.source, out.reason.String(), &fin
	r.Outputs = mustJSON(nonNil(out.outputs))
	r.NextActions = mustJSON(nonNil(out.actions))
	r.Artifacts = mustJSON(nonNil(out.artifacts))
	if res := out.result; res != nil {
		r.Stdout, r.StdoutTruncated, r.Stderr, r.StderrTruncated = res.Stdout, res.StdoutTruncated, res.Stderr, res.StderrTruncated
	}
	r.HeldBytes = heldBytes(r, out.artifacts)
	rev, ok, err := s.st.RecordRun(ctx, r, attempt, out.session)
	if err != nil || !ok {
		return false, err
	}
	for _, a := range out.discard {
		if a.Key == "" {
			continue
		}
		if err := s.blobs.Delete(ctx, a.Key); err != nil && !errors.Is(err, blob.ErrNotFound) {
			s.log.Warn("deleting an artifact of a failed run; the janitor's orphan sweep retries", "run", r.ID, "key", a.Key, "error", err)
		}
	}
	if rev != nil && s.cfg.SessionWritten != nil {
		s.cfg.SessionWritten(ctx, store.SessionKey{ToolID: r.ToolID, UserID: r.UserID, Context: r.Context}, *rev)
	}
	s.metrics.Runs.WithLabelValues(r.Status).Inc()
	if r.StartedAt != nil {
		s.metrics.RunDuration.Observe(fin.Sub(*r.StartedAt).Seconds())
	}
	s.status(r.ID, r.Status)
	return true, nil
}

// End ends run id, whatever its attempt, as status with summary, when it is not over
// yet: a run whose workers were lost, or one cancelled while its worker was. A run it
// fails is the runner's (store.SourceRunner, as store.EndRun records it), for reason why
// (the zero Reason for a cancelled one). It reports whether it did.
func (s *Service) End(ctx context.Context, id, status, summary string, why Reason) (bool, error) {
	ok, err := s.st.EndRun(ctx, id, status, summary, why.String(), s.now())
	if ok {
		s.metrics.Runs.WithLabelValues(status).Inc()
		s.status(id, status)
	}
	return ok, err
}

// heldBytes is what finished run r holds against its user's quota: its kept artifacts
// (reserved as they were stored) and the outputs and logs of its record. The record's
// part is bounded by the policy and the log caps, so it is counted, not refused.
func heldBytes(r store.Run, arts []Artifact) int64 {
	n := int64(len(r.Outputs) + len(r.NextActions) + len(r.Stdout) + len(r.Stderr))
	for _, a := range arts {
		if a.Key != "" {
			n += a.Bytes
		}
	}
	return n
}
