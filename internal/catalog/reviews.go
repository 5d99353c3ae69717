package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Review before publishing (docs/authoring.md "Review before publishing"). With
// SKRIP_REVIEW on, only admins publish directly: an author submits a version with a
// note, and a reviewer or an admin approves it (which publishes exactly that version)
// or asks for changes with a comment. A reviewer does not decide their own submission;
// an admin may, as an admin may publish anyway.
var (
	// ErrReviewRequired means a direct publish by someone who must submit for review.
	ErrReviewRequired = errors.New("review required")
	// ErrReviewOff means a submission while review is off: publish directly instead.
	ErrReviewOff = errors.New("review is off")
	// ErrNoReview means no such review, or one the user may not see.
	ErrNoReview = errors.New("review not found")
	// ErrReviewerOnly means the review queue or a decision, asked for by someone who is
	// neither a reviewer nor an admin.
	ErrReviewerOnly = errors.New("reviewers only")
	// ErrOwnReview means a reviewer deciding their own submission.
	ErrOwnReview = errors.New("own submission")
	// ErrReviewDecided means a decision on a review that is no longer pending.
	ErrReviewDecided = errors.New("review decided")
	// ErrReviewPending means a submission of a version that waits for review already.
	ErrReviewPending = errors.New("review pending")
	// ErrVersionPublished means a submission of the version that is published already.
	ErrVersionPublished = errors.New("version published")
	// ErrReviewInvalid means a note, a comment, a status filter, a cursor or a limit
	// that is not acceptable.
	ErrReviewInvalid = errors.New("invalid review")
)

// Caps on what reviews carry.
const (
	MaxReviewNoteBytes    = 2000 // an author's note with a submission
	MaxReviewCommentBytes = 4000 // a reviewer's comment when asking for changes
	MaxReviewPage         = 200  // reviews one page of a listing holds
)

// Audit actions of reviews, in the audit log beside account's.
const (
	AuditReviewSubmitted        = "review_submitted"
	AuditReviewApproved         = "review_approved"
	AuditReviewChangesRequested = "review_changes_requested"
)

// SetReview turns review before publishing on or off (SKRIP_REVIEW).
func (s *Service) SetReview(on bool) { s.review = on }

// ReviewOn reports whether review before publishing is on.
func (s *Service) ReviewOn() bool { return s.review }

// MayPublish refuses u a direct publish while review is on, unless u is an admin.
func (s *Service) MayPublish(u store.User) error {
	if s.review && u.Role != store.RoleAdmin {
		return errs.New(ErrReviewRequired, map[string]any{"role": u.Role},
			"review before publishing is on: submit the version for review (POST /api/v1/tool-versions/{id}/submit); only admins publish directly")
	}
	return nil
}

// MayReview reports whether u reviews: sees the queue and decides, a reviewer or an admin.
func MayReview(u store.User) bool { return u.Role == store.RoleReviewer || u.Role == store.RoleAdmin }

func needReviewer(u store.User) error {
	if !MayReview(u) {
		return errs.New(ErrReviewerOnly, map[string]any{"role": u.Role, "needs": store.RoleReviewer},
			"reviews are for reviewers and admins; you are %s", u.Role)
	}
	return nil
}

// checkText trims s and checks it is valid UTF-8 of at most limit bytes, and not empty
// when required.
func checkText(field, s string, limit int, required bool) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case required && s == "":
		return "", errs.New(ErrReviewInvalid, map[string]any{"field": field, "rule": "required"}, "%s is empty; say what should change", field)
	case len(s) > limit:
		return "", errs.New(ErrReviewInvalid, map[string]any{"field": field, "rule": "max_length", "limit_bytes": limit},
			"%s is %d bytes; the limit is %d bytes", field, len(s), limit)
	case !utf8.ValidString(s):
		return "", errs.New(ErrReviewInvalid, map[string]any{"field": field, "rule": "utf8"}, "%s is not valid UTF-8 text", field)
	}
	return s, nil
}

// auditEvent is the audit log's record of u, from address, doing action to target.
func (s *Service) auditEvent(u store.User, address, action, target string, details map[string]any) store.AuditEvent {
	d, _ := json.Marshal(details)
	return store.AuditEvent{ID: ids.New("ev"), At: s.now(), ActorID: u.ID, Actor: u.Name, Action: action, Target: target,
		Address: address, Details: string(d)}
}

// Submit asks for version id to be published, by u, who must own its tool, with a
// note. address is u's, for the audit log. A pending review of another version of the
// tool is superseded by this one.
func (s *Service) Submit(ctx context.Context, u store.User, address, id, note string) (store.Review, error) {
	v, t, err := s.OwnedVersion(ctx, u, id)
	if err != nil {
		return store.Review{}, err
	}
	if !s.review {
		return store.Review{}, errs.New(ErrReviewOff, map[string]any{"version": v.ID},
			"review before publishing is off on this server: publish the version directly")
	}
	if t.PublishedVersionID == v.ID {
		return store.Review{}, errs.New(ErrVersionPublished, map[string]any{"version": v.ID}, "version %s is published already", v.ID)
	}
	if note, err = checkText("note", note, MaxReviewNoteBytes, false); err != nil {
		return store.Review{}, err
	}
	r := store.Review{ID: ids.New("rv"), ToolID: t.ID, VersionID: v.ID, SubmittedBy: u.ID, Note: note, SubmittedAt: s.now()}
	e := s.auditEvent(u, address, AuditReviewSubmitted, t.Slug, map[string]any{"review": r.ID, "version": v.ID, "note": note})
	if err := s.st.SubmitReview(ctx, r, e); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return store.Review{}, errs.New(ErrReviewPending, map[string]any{"version": v.ID}, "version %s waits for review already", v.ID)
		}
		return store.Review{}, err
	}
	return s.st.Review(ctx, r.ID)
}

// Review returns review id if u may see it: reviewers and admins see every review, the
// tool's maintainers their tool's; anyone else is told there is none.
func (s *Service) Review(ctx context.Context, u store.User, id string) (store.Review, error) {
	none := errs.New(ErrNoReview, map[string]any{"review": id}, "no review %q", id)
	r, err := s.st.Review(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Review{}, none
	}
	if err != nil || MayReview(u) {
		return r, err
	}
	t, err := s.st.Tool(ctx, r.ToolID)
	if err != nil || !Owns(u, t) {
		return store.Review{}, none
	}
	return r, nil
}

// ReviewStatuses are the statuses a listing may ask for; "all" is every one.
var ReviewStatuses = []string{store.ReviewPending, store.ReviewApproved, store.ReviewChangesRequested, store.ReviewSuperseded, "all"}

// Queue lists reviews for a reviewer or an admin, newest first, of status (""
// is pending, "all" every status), limit at a time from cursor (the id of the last
// review of the page before; "" starts at the newest). next is the cursor of the
// following page, "" at the end.
func (s *Service) Queue(ctx context.Context, u store.User, status, cursor string, limit int) (list []store.Review, next string, err error) {
	if err := needReviewer(u); err != nil {
		return nil, "", err
	}
	switch status {
	case "":
		status = store.ReviewPending
	case "all":
		status = ""
	case store.ReviewPending, store.ReviewApproved, store.ReviewChangesRequested, store.ReviewSuperseded:
	default:
		return nil, "", errs.New(ErrReviewInvalid, map[string]any{"field": "status", "value": status},
			"status %q must be one of %s", status, strings.Join(ReviewStatuses, ", "))
	}
	if limit < 1 || limit > MaxReviewPage {
		return nil, "", errs.New(ErrReviewInvalid, map[string]any{"field": "limit", "value": limit}, "limit must be from 1 to %d", MaxReviewPage)
	}
	if cursor != "" && !strings.HasPrefix(cursor, "rv_") {
		return nil, "", errs.New(ErrReviewInvalid, map[string]any{"field": "cursor", "value": cursor}, "cursor %q is not one this server gave out", cursor)
	}
	list, err = s.st.Reviews(ctx, store.ReviewFilter{Status: status, Before: cursor, Limit: limit + 1})
	if err != nil {
		return nil, "", err
	}
	if len(list) > limit {
		list, next = list[:limit], list[limit-1].ID
	}
	return list, next, nil
}

// ToolReviews lists the reviews of the tool ref (an id or a slug), newest first (at most
// MaxReviewPage), for those who may change it, reviewers and admins; anyone else is
// told there is no such tool.
func (s *Service) ToolReviews(ctx context.Context, u store.User, ref string) ([]store.Review, error) {
	t, err := s.st.Tool(ctx, ref)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !Owns(u, t) && !MayReview(u)) {
		return nil, errs.New(ErrNotFound, map[string]any{"tool": ref}, "no tool %q", ref)
	}
	if err != nil {
		return nil, err
	}
	return s.st.Reviews(ctx, store.ReviewFilter{ToolID: t.ID, Limit: MaxReviewPage})
}

// LatestReview is the newest review of version v of tool t, for the editor; nil when
// it has none.
func (s *Service) LatestReview(ctx context.Context, t store.Tool, v store.ToolVersion) (*store.Review, error) {
	list, err := s.st.Reviews(ctx, store.ReviewFilter{ToolID: t.ID, Limit: MaxReviewPage})
	if err != nil {
		return nil, err
	}
	for _, r := range list {
		if r.VersionID == v.ID {
			return &r, nil
		}
	}
	return nil, nil
}

// Approve publishes the version of pending review id, by u, a reviewer (not of their
// own submission) or an admin; address is u's, for the audit log.
func (s *Service) Approve(ctx context.Context, u store.User, address, id string) (store.Review, error) {
	return s.decide(ctx, u, address, id, store.ReviewApproved, "")
}

// RequestChanges sends pending review id back to its author with comment (required, at
// most MaxReviewCommentBytes), by u, as for Approve.
func (s *Service) RequestChanges(ctx context.Context, u store.User, address, id, comment string) (store.Review, error) {
	comment, err := checkText("comment", comment, MaxReviewCommentBytes, true)
	if err != nil {
		return store.Review{}, err
	}
	return s.decide(ctx, u, address, id, store.ReviewChangesRequested, comment)
}

func (s *Service) decide(ctx context.Context, u store.User, address, id, status, comment string) (store.Review, error) {
	if err := needReviewer(u); err != nil {
		return store.Review{}, err
	}
	r, err := s.Review(ctx, u, id)
	if err != nil {
		return store.Review{}, err
	}
	if u.Role != store.RoleAdmin {
		// Nor a version they wrote and a co-maintainer submitted.
		v, err := s.st.ToolVersion(ctx, r.VersionID)
		if err != nil {
			return store.Review{}, err
		}
		if r.SubmittedBy == u.ID || v.CreatedBy == u.ID {
			return store.Review{}, errs.New(ErrOwnReview, map[string]any{"review": r.ID},
				"you wrote or submitted this version yourself: another reviewer or an admin decides on it")
		}
	}
	if r.Status != store.ReviewPending {
		return store.Review{}, errs.New(ErrReviewDecided, map[string]any{"review": r.ID, "status": r.Status}, "review %s is %s already", r.ID, r.Status)
	}
	action, details := AuditReviewApproved, map[string]any{"review": r.ID, "version": r.VersionID, "submitted_by": r.SubmitterName}
	if status == store.ReviewChangesRequested {
		action, details["comment"] = AuditReviewChangesRequested, comment
	}
	err = s.st.DecideReview(ctx, r.ID, status, u.ID, comment, s.now(), s.auditEvent(u, address, action, r.ToolSlug, details))
	if errors.Is(err, store.ErrNotPending) {
		// Another reviewer decided meanwhile.
		return store.Review{}, errs.New(ErrReviewDecided, map[string]any{"review": r.ID}, "review %s was decided meanwhile", r.ID)
	}
	if err != nil {
		return store.Review{}, err
	}
	return s.st.Review(ctx, r.ID)
}

// ReadableVersion returns version id and its tool if u may read it: those who may
// change the tool (OwnedVersion), and reviewers and admins for a version that was
// submitted for review or that is published beside one that was (what a reviewer
// compares against). Anyone else is told there is no such version.
func (s *Service) ReadableVersion(ctx context.Context, u store.User, id string) (store.ToolVersion, store.Tool, error) {
	v, t, err := s.OwnedVersion(ctx, u, id)
	if err == nil || !errors.Is(err, ErrNoVersion) || !MayReview(u) {
		return v, t, err
	}
	notFound := err
	v, err = s.st.ToolVersion(ctx, id)
	if err != nil {
		return store.ToolVersion{}, store.Tool{}, notFound
	}
	if t, err = s.st.Tool(ctx, v.ToolID); err != nil {
		return store.ToolVersion{}, store.Tool{}, notFound
	}
	list, err := s.st.Reviews(ctx, store.ReviewFilter{ToolID: t.ID, Limit: MaxReviewPage})
	if err != nil {
		return store.ToolVersion{}, store.Tool{}, err
	}
	for _, r := range list {
		if r.VersionID == v.ID || (v.ID == t.PublishedVersionID && r.Status == store.ReviewPending) {
			return v, t, nil
		}
	}
	return store.ToolVersion{}, store.Tool{}, notFound
}
