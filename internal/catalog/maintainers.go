package catalog

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// Several authors per tool: a tool's maintainers may do to it what its author may, and
// while one has its editor open, the others see who and since when (the edit lock).
var (
	// ErrNoMaintainer means the user named is not among the tool's maintainers.
	ErrNoMaintainer = errors.New("not a maintainer")
	// ErrMaintainerInvalid means a user who cannot become a maintainer: no active user
	// of that name or id with the author role or above.
	ErrMaintainerInvalid = errors.New("invalid maintainer")
	// ErrMaintainerKept means a maintainer who may not be removed: the tool's author, or
	// its last maintainer.
	ErrMaintainerKept = errors.New("maintainer kept")
)

// EditLockTTL is how long an edit lock lasts without a heartbeat from the holder's
// editor page (which sends one every minute; static/editlock.js).
const EditLockTTL = 10 * time.Minute

// Maintains reports whether u maintains t: may edit it, save and publish its versions,
// try them in the editor's sandbox, unpublish it, and sees its problem reports. That is
// its maintainers (its author always among them) while their role may author, and every
// admin: a maintainer whose role is lowered to user (by an admin, or by sign-on's role
// map) changes nothing, through the API as through the web. It is the one place this
// rule lives: Owns, Owned, OwnedVersion and the reports go through it, and the store's
// queries for "my tools" and for reports follow it.
func Maintains(u store.User, t store.Tool) bool {
	return u.Role == store.RoleAdmin || CanAuthor(u) && (t.AuthorID == u.ID || slices.Contains(t.MaintainerIDs, u.ID))
}

// Maintainers lists the maintainers of the tool ref, if u maintains it.
func (s *Service) Maintainers(ctx context.Context, u store.User, ref string) (store.Tool, []store.Maintainer, error) {
	t, err := s.Owned(ctx, u, ref)
	if err != nil {
		return store.Tool{}, nil, err
	}
	list, err := s.st.Maintainers(ctx, t.ID)
	return t, list, err
}

// AddMaintainer makes the user who (a name or an id) a maintainer of the tool ref, if u
// maintains it. They must be an active user who may write tools (CanAuthor): the editor
// is for authors. A user who is one already stays one, and added is false.
func (s *Service) AddMaintainer(ctx context.Context, u store.User, ref, who string) (t store.Tool, m store.Maintainer, added bool, err error) {
	if t, err = s.Owned(ctx, u, ref); err != nil {
		return t, m, false, err
	}
	if err := checkWho(who); err != nil {
		return t, m, false, err
	}
	target, err := s.userNamed(ctx, who)
	// One answer for a user who does not exist and one who may not write tools, so a
	// maintainer learns no more about the users than that.
	if err != nil || target.State != store.StateActive || !CanAuthor(target) {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return t, m, false, err
		}
		return t, m, false, errs.New(ErrMaintainerInvalid, map[string]any{"user": who},
			"there is no active user %q with the author role or above; only they may maintain a tool", who)
	}
	if added, err = s.st.AddMaintainer(ctx, t.ID, target.ID, u.ID, s.now()); err != nil {
		return t, m, false, err
	}
	m, err = s.st.Maintainer(ctx, t.ID, target.ID)
	return t, m, added, err
}

// RemoveMaintainer removes the user who (a name or an id) from the maintainers of the
// tool ref, if u maintains it; a maintainer may remove themselves. The tool's author is
// always a maintainer, and a tool always keeps one: removing either is refused with
// ErrMaintainerKept.
func (s *Service) RemoveMaintainer(ctx context.Context, u store.User, ref, who string) (store.Tool, store.Maintainer, error) {
	t, err := s.Owned(ctx, u, ref)
	if err != nil {
		return t, store.Maintainer{}, err
	}
	if err := checkWho(who); err != nil {
		return t, store.Maintainer{}, err
	}
	notOne := errs.New(ErrNoMaintainer, map[string]any{"tool": t.Slug, "user": who}, "%q is not a maintainer of %s", who, t.Slug)
	target, err := s.userNamed(ctx, who)
	if errors.Is(err, store.ErrNotFound) {
		return t, store.Maintainer{}, notOne
	}
	if err != nil {
		return t, store.Maintainer{}, err
	}
	if target.ID == t.AuthorID {
		return t, store.Maintainer{}, errs.New(ErrMaintainerKept, map[string]any{"tool": t.Slug, "user": target.Name, "rule": "author"},
			"%s is the author of %s, and the author is always a maintainer", target.Name, t.Slug)
	}
	m, err := s.st.Maintainer(ctx, t.ID, target.ID)
	if errors.Is(err, store.ErrNotFound) {
		return t, m, notOne
	}
	if err != nil {
		return t, m, err
	}
	err = s.st.RemoveMaintainer(ctx, t.ID, target.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return t, m, notOne
	case errors.Is(err, store.ErrConflict):
		return t, m, errs.New(ErrMaintainerKept, map[string]any{"tool": t.Slug, "user": target.Name, "rule": "last"},
			"%s is the last maintainer of %s; add another before removing them", target.Name, t.Slug)
	}
	return t, m, err
}

// checkWho refuses a user reference that is empty or longer than any name or id.
func checkWho(who string) error {
	if strings.TrimSpace(who) == "" {
		return errs.New(ErrMaintainerInvalid, map[string]any{"field": "user", "rule": "required"}, "name the user: their name or id")
	}
	if len(who) > 200 {
		return errs.New(ErrMaintainerInvalid, map[string]any{"field": "user", "rule": "max_length", "limit_bytes": 200},
			"user is %d bytes; no name or id is longer than 200", len(who))
	}
	return nil
}

// userNamed is the user with name or id who.
func (s *Service) userNamed(ctx context.Context, who string) (store.User, error) {
	if who == "" {
		return store.User{}, store.ErrNotFound
	}
	u, err := s.st.UserByName(ctx, who)
	if errors.Is(err, store.ErrNotFound) {
		u, err = s.st.User(ctx, who)
	}
	return u, err
}

// EditLock is who has a tool's editor open, as its editor shows it.
type EditLock struct {
	store.EditLock
	// Mine says the caller holds it; otherwise someone else does, and the caller's
	// editor warns that saving may overwrite their work.
	Mine bool
}

// ClaimEditLock is called when u opens the editor of t, and every minute while it is
// open: u gets t's edit lock unless another maintainer's editor holds it and was seen
// within EditLockTTL. With take, u takes it over whatever its state. The lock blocks
// nothing; it says who else is editing. u must maintain t.
func (s *Service) ClaimEditLock(ctx context.Context, u store.User, t store.Tool, take bool) (EditLock, error) {
	if !Maintains(u, t) {
		return EditLock{}, errs.New(ErrForbidden, map[string]any{"tool": t.Slug}, "only the maintainers of %s or an admin may edit it", t.Slug)
	}
	now := s.now()
	l, err := s.st.ClaimEditLock(ctx, t.ID, u.ID, now, now.Add(-EditLockTTL), take)
	if err != nil {
		return EditLock{}, err
	}
	return EditLock{EditLock: l, Mine: l.UserID == u.ID}, nil
}
