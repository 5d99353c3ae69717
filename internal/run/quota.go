package run

import (
	"context"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runjob"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// Quota keeps one run's artifacts within its user's quota and the store's total (SPEC
// §12 "One quota per user"): the run's artifacts reserve their bytes in the database
// before they are stored, together, in one transaction beside everything the user
// holds, so runs finishing at once cannot together pass the quota. An artifact that
// does not fit is not stored; the run keeps what fits and Notice says what was dropped.
// A run that ended meanwhile, or that another attempt holds, keeps none. The zero
// limits keep everything.
type Quota struct {
	st                  *store.Store
	run, user           string
	attempt             int64 // the attempt whose artifacts these are; 0: whichever holds the run
	userQuota, maxTotal int64
	now                 func() time.Time

	kept, dropped int64
	used          int64 // what the user held at the last refusal
	full          bool  // the store's total refused, not the user's quota
	names         runjob.Skipped
}

// Quota returns the Quota of run r's artifacts, of its attempt r.Attempts when that is
// known (not 0).
func (s *Service) Quota(r store.Run) *Quota {
	return &Quota{st: s.st, run: r.ID, user: r.UserID, attempt: r.Attempts, userQuota: s.cfg.UserQuotaBytes, maxTotal: s.cfg.MaxTotalBytes, now: s.now}
}

// Reserve reserves the bytes of a run's artifacts, all in one reservation, and reports
// for each, in order, whether it may be stored: each that fits beside what the user
// holds and the ones before it. Refusals are remembered for the notice.
func (q *Quota) Reserve(ctx context.Context, arts []Planned) ([]bool, error) {
	ok := make([]bool, len(arts))
	if q == nil || q.userQuota <= 0 {
		for i := range ok {
			ok[i] = true
		}
		return ok, nil
	}
	sizes := make([]int64, len(arts))
	for i, a := range arts {
		sizes[i] = a.Bytes
	}
	room, err := q.st.ReserveRunBytes(ctx, q.run, q.attempt, q.user, sizes, q.userQuota, q.maxTotal, q.now())
	if err != nil {
		return ok, err
	}
	if room.Ended {
		// The run's record is no longer this attempt's to write: nothing is kept, and
		// there is no one to tell.
		return ok, nil
	}
	held := room.User.Total()
	for i, a := range arts {
		if room.Kept[i] {
			q.kept += a.Bytes
			held += a.Bytes
			ok[i] = true
			continue
		}
		q.dropped += a.Bytes
		q.used = held
		q.full = held+a.Bytes <= q.userQuota
		q.names.Add(strings.TrimPrefix(a.Path, "output/"))
	}
	return ok, nil
}

// Release gives back n bytes reserved for an artifact that was not stored after all.
func (q *Quota) Release(ctx context.Context, n int64) {
	if q == nil || q.userQuota <= 0 || n == 0 {
		return
	}
	q.kept -= n
	q.st.ReleaseRunBytes(context.WithoutCancel(ctx), q.run, n)
}

// Notice says which artifacts were dropped for the quota, with the numbers, or nothing
// when none were.
func (q *Quota) Notice() []contract.Output {
	if q == nil || q.names.Count() == 0 {
		return nil
	}
	list := q.names.List()
	if q.full {
		return []contract.Output{contract.Notice("warning",
			"The file store is full (%s limit): this run kept %s of artifacts and dropped %s (%s). Ask an operator to make room.",
			runner.HumanBytes(q.maxTotal), runner.HumanBytes(q.kept), runner.HumanBytes(q.dropped), list)}
	}
	return []contract.Output{contract.Notice("warning",
		"Your storage quota is %s and you use %s of it: this run kept %s of artifacts and dropped %s (%s). Delete files or wait for old runs' artifacts to expire, then run it again.",
		runner.HumanBytes(q.userQuota), runner.HumanBytes(q.used), runner.HumanBytes(q.kept), runner.HumanBytes(q.dropped), list)}
}
