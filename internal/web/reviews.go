package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/store"
)

// Review before publishing (docs/web-ui.md "Granskning"): the editor's box where an
// author submits a version and reads the decision, and the reviewers' queue.

// reviewBox is the editor's review part for the version shown: whether the author
// submits instead of publishing, the version's newest review, and the tool's newest
// review when it is of another version (the comment an author fixes in a new one).
type reviewBox struct {
	MustSubmit bool          // review is on and the caller is no admin
	Version    *store.Review // the shown version's newest review; nil: none
	Latest     *store.Review // the tool's newest review, when of another version
	CanSubmit  bool          // the form is shown: not published, not waiting
	MaxNote    int           // catalog.MaxReviewNoteBytes
	Error      string        // why a submission was refused
	Note       string        // the refused submission's note, shown again
	Submitted  bool          // the author just submitted
	Tool       store.Tool    // for links
	VersionID  string        // the shown version
	CSRF       string        // the form's anti-forgery token
	Compare    string        // the diff page of the shown version against the published one; "" when none
	Reviewers  bool          // the caller reviews: a link to the queue
}

// reviewBox is the review part of the editor of version v of tool t for c, or nil when
// review is off and the tool has no reviews.
func (h *Handler) reviewBox(r *http.Request, c *call, t store.Tool, v store.ToolVersion) (*reviewBox, error) {
	on := h.catalog.ReviewOn()
	list, err := h.catalog.ToolReviews(r.Context(), c.User, t.ID)
	if err != nil {
		return nil, err
	}
	if !on && len(list) == 0 {
		return nil, nil
	}
	b := &reviewBox{MustSubmit: on && c.User.Role != store.RoleAdmin, MaxNote: catalog.MaxReviewNoteBytes, Tool: t, VersionID: v.ID, CSRF: c.CSRF,
		Reviewers: catalog.MayReview(c.User), Submitted: r.URL.Query().Get("submitted") == "1"}
	for i := range list {
		if list[i].VersionID == v.ID {
			b.Version = &list[i]
			break
		}
	}
	if len(list) > 0 && list[0].VersionID != v.ID {
		b.Latest = &list[0]
	}
	b.CanSubmit = on && v.ID != t.PublishedVersionID && (b.Version == nil || b.Version.Status != store.ReviewPending)
	if t.PublishedVersionID != "" && t.PublishedVersionID != v.ID {
		b.Compare = diffURL(v.ID, t.PublishedVersionID)
	}
	return b, nil
}

// diffURL is the page that compares version a against version b.
func diffURL(a, b string) string {
	return "/editor/versions/" + url.PathEscape(a) + "/diff?against=" + url.QueryEscape(b)
}

// submitReview submits a version for review from the editor, and goes back to it. A
// refused submission shows the editor again with the note as typed and why.
func (h *Handler) submitReview(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	v, t, err := h.catalog.OwnedVersion(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	note := r.PostFormValue("note")
	if _, err := h.catalog.Submit(r.Context(), c.User, h.front.ClientAddr(r), v.ID, note); err != nil {
		status, _ := h.statusOf(w, err)
		if !shownToUser(status) {
			return err
		}
		return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: v.ID, Status: status,
			ReviewErr: h.message(r, err), ReviewNote: note})
	}
	redirect(w, r, "/editor/"+t.Slug+"?submitted=1"+versionQuery(v.ID))
	return nil
}

// reviewRow is a review as the queue lists it.
type reviewRow struct {
	store.Review
	Compare string // the diff page against the published version; "" when none is published
	Own     bool   // the caller submitted it: a reviewer does not decide it
	Source  string // the submitted version's source, for a pending review
	Error   string // why a decision on it was refused
	Comment string // the refused comment, shown again
}

// reviewsPage lists the queue for a reviewer or an admin: the pending reviews, newest
// first (?status=all: every review), each with a link that compares the version with
// the published one and the buttons that decide.
func (h *Handler) reviewsPage(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.showReviews(w, r, c, http.StatusOK, "", nil)
}

func (h *Handler) showReviews(w http.ResponseWriter, r *http.Request, c *call, status int, refusedID string, refusal *reviewRow) error {
	q := r.URL.Query()
	filter := q.Get("status")
	cursor := q.Get("cursor")
	list, next, err := h.catalog.Queue(r.Context(), c.User, filter, cursor, 50)
	if err != nil {
		return err
	}
	rows := make([]reviewRow, 0, len(list))
	for _, v := range list {
		row := reviewRow{Review: v, Own: v.SubmittedBy == c.User.ID && c.User.Role != store.RoleAdmin}
		if v.PublishedVersionID != "" && v.PublishedVersionID != v.VersionID {
			row.Compare = diffURL(v.VersionID, v.PublishedVersionID)
		}
		if v.Status == store.ReviewPending {
			ver, _, err := h.catalog.ReadableVersion(r.Context(), c.User, v.VersionID)
			if err != nil {
				return err
			}
			row.Source = ver.Source
		}
		if refusal != nil && v.ID == refusedID {
			row.Error, row.Comment = refusal.Error, refusal.Comment
		}
		rows = append(rows, row)
	}
	data := map[string]any{"Title": h.langOf(r).T("review.title"), "Reviews": rows, "All": filter == "all", "ReviewOn": h.catalog.ReviewOn(),
		"MaxComment": catalog.MaxReviewCommentBytes}
	if next != "" {
		data["Next"] = "/reviews?status=" + url.QueryEscape(filter) + "&cursor=" + url.QueryEscape(next)
	}
	h.render(w, r, status, "reviews", c, data)
	return nil
}

// approveReview publishes a review's version from the queue, and goes back to it.
func (h *Handler) approveReview(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.decideReview(w, r, c, func() (store.Review, error) {
		return h.catalog.Approve(r.Context(), c.User, h.front.ClientAddr(r), r.PathValue("id"))
	}, "")
}

// requestChanges sends a review back to its author with a comment. A refused one (no
// comment, too long) shows the queue again with the comment as typed and why.
func (h *Handler) requestChanges(w http.ResponseWriter, r *http.Request, c *call) error {
	comment := r.PostFormValue("comment")
	return h.decideReview(w, r, c, func() (store.Review, error) {
		return h.catalog.RequestChanges(r.Context(), c.User, h.front.ClientAddr(r), r.PathValue("id"), comment)
	}, comment)
}

func (h *Handler) decideReview(w http.ResponseWriter, r *http.Request, c *call, decide func() (store.Review, error), comment string) error {
	v, err := decide()
	if err != nil {
		status, _ := h.statusOf(w, err)
		if !shownToUser(status) || errors.Is(err, catalog.ErrReviewerOnly) || errors.Is(err, catalog.ErrNoReview) {
			return err
		}
		return h.showReviews(w, r, c, status, r.PathValue("id"), &reviewRow{Error: h.message(r, err), Comment: comment})
	}
	redirect(w, r, "/reviews?decided="+url.QueryEscape(v.ID)+"#queue")
	return nil
}
