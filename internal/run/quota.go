package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// Quota keeps one run's artifacts within its user's quota and the store's total (SPEC
// §12 "One quota per user"): each artifact reserves its bytes in the database before
// they are stored, atomically beside everything the user holds, so runs finishing at
// once cannot together pass the quota. An artifact that does not fit is not stored; the
// run keeps what fits and Notice says what was dropped. The zero limits keep everything.
type Quota struct {
	st                  *store.Store
	run, user           string
	userQuota, maxTotal int64
	now                 func() time.Time

	kept, dropped int64
	used          int64 // what the user held at the last refusal
	full          bool  // the store's total refused, not the user's quota
	names         skipped
}

// Quota returns the Quota of run r's artifacts.
func (s *Service) Quota(r store.Run) *Quota {
	return &Quota{st: s.st, run: r.ID, user: r.UserID, userQuota: s.cfg.UserQuotaBytes, maxTotal: s.cfg.MaxTotalBytes, now: s.now}
}

// Reserve reserves n bytes for the artifact at path ("output/…") and reports whether it
// may be stored. A refusal is remembered for the notice.
func (q *Quota) Reserve(ctx context.Context, path string, n int64) (bool, error) {
	if q == nil || q.userQuota <= 0 {
		return true, nil
	}
	room, err := q.st.ReserveRunBytes(ctx, q.run, q.user, n, q.userQuota, q.maxTotal, q.now())
	if err != nil {
		return false, err
	}
	if !room.OK {
		q.dropped += n
		q.used = room.User.Total()
		q.full = room.User.Total()+n <= q.userQuota
		q.names.add(strings.TrimPrefix(path, "output/"))
		return false, nil
	}
	q.kept += n
	return true, nil
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
	if q == nil || q.names.count == 0 {
		return nil
	}
	list := strings.Join(q.names.names, ", ")
	if more := q.names.count - len(q.names.names); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	if q.full {
		return []contract.Output{contract.Notice("warning",
			"The file store is full (%s limit): this run kept %s of artifacts and dropped %s (%s). Ask an operator to make room.",
			runner.HumanBytes(q.maxTotal), runner.HumanBytes(q.kept), runner.HumanBytes(q.dropped), list)}
	}
	return []contract.Output{contract.Notice("warning",
		"Your storage quota is %s and you use %s of it: this run kept %s of artifacts and dropped %s (%s). Delete files or wait for old runs' artifacts to expire, then run it again.",
		runner.HumanBytes(q.userQuota), runner.HumanBytes(q.used), runner.HumanBytes(q.kept), runner.HumanBytes(q.dropped), list)}
}
