package run

import (
	"context"
	"time"

	"github.com/skrip-dev/skrip/internal/store"
)

// Executor is where a Service's runs execute: this server's own pool (the one New
// makes), or a cluster's workers (package dispatch, given with Use). The service
// admits a run, stores it and records how it ended; the executor holds it in between.
// Both report to the service in the same words: Claim when an attempt starts, Record
// when it ends, End when it is ended from outside (docs/architecture.md, "Where work
// runs").
type Executor interface {
	// Admit reserves room for one run before anything of it is made, or returns an
	// ErrBusy error. release gives the room back; the service calls it when the run is
	// not started after all.
	Admit(ctx context.Context) (release func(), err error)
	// Limit is how many runs may be queued and running in all, counted as a run is
	// stored (store.AdmitRun), where the executor's own count (Admit) is not exact: a
	// cluster's queue, whose runs wait in the database. 0 is no such count.
	Limit() int
	// Start executes run r, stored queued after Admit, as job with the files of dir as
	// its input. From Start on, dir is the executor's, even when Start fails; before, it
	// is the caller's. An error means the run was not queued: Start ended or removed it,
	// and an ErrBusy error is the client's to try again.
	Start(ctx context.Context, r store.Run, job Job, dir string) error
	// Cancel stops queued or running run id, as Service.Cancel says.
	Cancel(ctx context.Context, id string) (bool, error)
	// Status tells the other servers that run id is now status; the service has told
	// its own subscribers.
	Status(id, status string)
	// Watch passes run r's output lines, when they are printed on another machine, to
	// deliver until stop is called, the ones printed before the call first. Lines
	// printed in this process reach the service's subscribers without it.
	Watch(r store.Run, deliver func(Event)) (stop func())
	// Recover ends the runs a crash of this server left unfinished, at start.
	Recover(ctx context.Context) error
	// Shutdown lets the runs under way here finish for up to grace, then stops them;
	// the service admits none meanwhile.
	Shutdown(grace time.Duration)
}
