package catalog

import (
	"context"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Problem reports: a run's owner tells the maintainers of the run's tool that the run
// went wrong (docs/api.md "Problem reports").
var (
	// ErrReportNotFound means no such report, or one on a tool the user does not maintain.
	ErrReportNotFound = errors.New("report not found")
	// ErrRunNotReportable means a run the user did not run: only a run's owner reports
	// it. (Anyone but an admin is told earlier that there is no such run, as runs are
	// private; an admin sees every run, but reports only their own.)
	ErrRunNotReportable = errors.New("not the run's owner")
	// ErrRunNotOver means the run is still queued or running.
	ErrRunNotOver = errors.New("run not finished")
	// ErrReported means the run has a report already.
	ErrReported = errors.New("run reported")
	// ErrReportInvalid means a report's message, a listing's cursor or its limit is not
	// acceptable.
	ErrReportInvalid = errors.New("invalid report")
	// ErrReportsThrottled means the user made reportsPerHour reports in the last hour.
	ErrReportsThrottled = errors.New("too many reports")
)

// Caps on reports.
const (
	MaxReportBytes = 4000 // a report's message
	ReportsPerHour = 20   // reports one user may make in an hour, unless SetReportsPerHour says otherwise
	MaxReportPage  = 200  // reports one page of a listing holds
)

// maintainerScope is the store's filter for the reports u sees: those on the tools u
// maintains, or, for an admin, all.
func maintainerScope(u store.User) string {
	if u.Role == store.RoleAdmin {
		return ""
	}
	return u.ID
}

// Report files a problem report of run rn by u, its owner, with an optional message
// (at most MaxReportBytes) and whether the tool's maintainers may see the run's input
// files. A run has one report: a second gives ErrReported.
func (s *Service) Report(ctx context.Context, u store.User, rn store.Run, message string, shareFiles bool) (store.Report, error) {
	if rn.UserID != u.ID {
		return store.Report{}, errs.New(ErrRunNotReportable, map[string]any{"run": rn.ID}, "only the person who ran %s may report it", rn.ID)
	}
	if !store.Terminal(rn.Status) {
		return store.Report{}, errs.New(ErrRunNotOver, map[string]any{"run": rn.ID, "status": rn.Status},
			"run %s is %s; report it once it is over", rn.ID, rn.Status)
	}
	message = strings.TrimSpace(message)
	switch {
	case len(message) > MaxReportBytes:
		return store.Report{}, errs.New(ErrReportInvalid, map[string]any{"field": "message", "rule": "max_length", "limit_bytes": MaxReportBytes},
			"message is %d bytes; the limit is %d bytes", len(message), MaxReportBytes)
	case !utf8.ValidString(message):
		return store.Report{}, errs.New(ErrReportInvalid, map[string]any{"field": "message", "rule": "utf8"}, "message is not valid UTF-8 text")
	}
	if prev, err := s.st.RunReport(ctx, rn.ID); err == nil {
		return store.Report{}, errs.New(ErrReported, map[string]any{"run": rn.ID, "report": prev.ID}, "run %s is reported already", rn.ID)
	}
	now := s.now()
	// Counted in the database, so that a cluster's nodes share the limit.
	n, err := s.st.ReportsSince(ctx, u.ID, now.Add(-time.Hour))
	if err != nil {
		return store.Report{}, err
	}
	if n >= s.reportsPerHour {
		return store.Report{}, errs.New(ErrReportsThrottled, map[string]any{"limit": s.reportsPerHour},
			"you made %d problem reports in the last hour, as many as one may; try again later", s.reportsPerHour).Retry(10 * time.Minute)
	}
	p := store.Report{ID: ids.New("pr"), RunID: rn.ID, ToolID: rn.ToolID, VersionID: rn.VersionID, UserID: u.ID, Message: message,
		ShareFiles: shareFiles, CreatedAt: now}
	err = s.st.CreateReport(ctx, p)
	if errors.Is(err, store.ErrConflict) { // reported meanwhile
		return store.Report{}, errs.New(ErrReported, map[string]any{"run": rn.ID}, "run %s is reported already", rn.ID)
	}
	if err != nil {
		return store.Report{}, err
	}
	return s.st.Report(ctx, p.ID)
}

// RunReport is u's report of run rn, if u ran it and reported it (nil otherwise).
func (s *Service) RunReport(ctx context.Context, u store.User, rn store.Run) (*store.Report, error) {
	if rn.UserID != u.ID {
		return nil, nil
	}
	p, err := s.st.RunReport(ctx, rn.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// reportID is what a cursor holds: the id of the last report of the page before.
var reportID = regexp.MustCompile(`^pr_[0-9A-Za-z]+$`)

// Reports returns one page of the reports on the tools u maintains (an admin: all),
// newest first, at most limit (1 to MaxReportPage), after cursor ("" for the first
// page), and the cursor of the next page ("" on the last). The cursor is opaque to
// clients; one this server did not give is refused.
func (s *Service) Reports(ctx context.Context, u store.User, cursor string, limit int) ([]store.Report, string, error) {
	if limit < 1 || limit > MaxReportPage {
		return nil, "", errs.New(ErrReportInvalid, map[string]any{"field": "limit", "value": limit},
			"limit %d must be a whole number from 1 to %d", limit, MaxReportPage)
	}
	before := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || !reportID.Match(b) {
			return nil, "", errs.New(ErrReportInvalid, map[string]any{"field": "cursor"}, "cursor %q is not one this server gave out", cursor)
		}
		before = string(b)
	}
	list, err := s.st.Reports(ctx, store.ReportFilter{MaintainerID: maintainerScope(u), Before: before, Limit: limit + 1})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(list) > limit {
		list = list[:limit]
		next = base64.RawURLEncoding.EncodeToString([]byte(list[limit-1].ID))
	}
	return list, next, nil
}

// MaintainedReport returns report id if u maintains its tool; anyone else is answered
// as if it did not exist.
func (s *Service) MaintainedReport(ctx context.Context, u store.User, id string) (store.Report, error) {
	notFound := errs.New(ErrReportNotFound, map[string]any{"report": id}, "no problem report %q", id)
	p, err := s.st.Report(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Report{}, notFound
	}
	if err != nil {
		return store.Report{}, err
	}
	t, err := s.st.Tool(ctx, p.ToolID)
	if err != nil {
		return store.Report{}, err
	}
	if !Maintains(u, t) {
		return store.Report{}, notFound
	}
	return p, nil
}

// CloseReport closes report id, if u maintains its tool. Closing a closed report
// changes nothing.
func (s *Service) CloseReport(ctx context.Context, u store.User, id string) (store.Report, error) {
	p, err := s.MaintainedReport(ctx, u, id)
	if err != nil {
		return store.Report{}, err
	}
	if _, err := s.st.CloseReport(ctx, p.ID, u.ID, s.now()); err != nil {
		return store.Report{}, err
	}
	return s.st.Report(ctx, p.ID)
}
