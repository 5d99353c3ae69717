// Package runjob is a run as the node that executes it sees it: the Job, plain data
// that travels to a worker or stays on this node; executing it on a runner; keeping
// what it left in /work/output as artifacts; and the Report of how it went. It knows
// nothing of the database, so that a worker, which never holds the database URL, links
// no SQL (docs/architecture.md); the run package records the Report.
package runjob

import (
	"context"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
)

// Job is one run to execute, as plain data: what a worker needs to run it, on this node
// or on another. Its input files travel beside it.
type Job struct {
	Run    string            `json:"run"`
	Tool   string            `json:"tool"`
	Script []byte            `json:"script"`
	Env    map[string]string `json:"env"`
	Memory []byte            `json:"memory,omitempty"`
	Limits runner.Limits     `json:"limits"`
}

// Report is what executing a run gave, as its worker saw it. The node that records the
// run judges it (Record): a worker's report is never trusted to say how the run ended.
type Report struct {
	Result    runner.Result     `json:"result"`
	Artifacts []Artifact        `json:"artifacts"`
	Notices   []contract.Output `json:"notices,omitempty"` // about files of /work/output not kept
	Limits    runner.Limits     `json:"limits"`            // the run's, for the words of a timeout or OOM
	// Failure, when set, is the summary of a failure of the worker, not of the tool: the
	// sandbox could not be set up, or the input files could not be read.
	Failure string `json:"failure,omitempty"`
	// Stopped says why the worker stopped the run early: StopCancelled, StopShutdown, or
	// "" when it ran to its end.
	Stopped string `json:"stopped,omitempty"`
}

// Why a worker stopped a run early.
const (
	StopCancelled = "cancelled" // a user cancelled it
	StopShutdown  = "shutdown"  // the worker was stopping and its grace period ended
)

// Collector keeps what a run left in /work/output (dir) as its artifacts.
type Collector func(ctx context.Context, dir string) ([]Artifact, []contract.Output, error)

// Execute runs job on rn with its input files in inputDir. It keeps the run's artifacts
// with collect and passes each line it prints to onLine (nil: none). A run that fails,
// times out or is stopped is a Report, as is a sandbox that could not be set up; the
// caller tells a stop by ctx apart (Report.Stopped).
func Execute(ctx context.Context, rn runner.Runner, job Job, inputDir string, collect Collector, onLine func(stream string, line []byte)) Report {
	rep := Report{Limits: job.Limits}
	var collectErr error
	spec := runner.Spec{
		ID: job.Run, ToolID: job.Tool, Script: job.Script, InputDir: inputDir, Env: job.Env, Memory: job.Memory, Limits: job.Limits,
		OnLine: onLine,
		Collect: func(dir string) error {
			rep.Artifacts, rep.Notices, collectErr = collect(context.WithoutCancel(ctx), dir)
			return collectErr
		},
	}
	res, err := rn.Run(ctx, spec)
	rep.Result = res
	if err != nil {
		rep.Failure = "the sandbox failed: see the server log"
		if collectErr != nil {
			rep.Failure = "the run's artifacts could not be stored: see the server log"
		}
	}
	return rep
}
