// Package catalog owns who may see and change tools: which tools a user sees (published
// ones, plus their own drafts), creating tools and versions with their schemas, editing a
// tool's info, publishing, each user's tool settings, who maintains a tool, whom a run's
// problem report reaches, review before publishing, and the home page's categories,
// favourites and recently used tools. The api and web packages both go through it, so the rules live in one place.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Sentinel errors.
var (
	// ErrNotFound means no such tool, or one the user may not see.
	ErrNotFound = errors.New("tool not found")
	// ErrNoVersion means no such tool version, or one the user may not see.
	ErrNoVersion = errors.New("tool version not found")
	// ErrExists means a tool with that slug already exists.
	ErrExists = errors.New("tool exists")
	// ErrForbidden means the user sees the tool but may not change it.
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid means a slug, title or source is not acceptable.
	ErrInvalid = errors.New("invalid tool")
	// ErrTooLarge means a source is over MaxSourceBytes.
	ErrTooLarge = errors.New("source too large")
	// ErrUnpublished means a tool has no published version to run.
	ErrUnpublished = errors.New("no published version")
)

// Caps on what an author sends.
const (
	MaxSourceBytes = 512 << 10 // a version's source
	MaxTitleBytes  = 200
	MaxDescBytes   = 2000     // description and summary
	MaxUsageBytes  = 64 << 10 // usage_instructions (markdown)

	maxSyntaxErrorBytes = 500 // of a syntax check's message kept with a version
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// SlugRule says what a slug may be, for messages.
const SlugRule = "1 to 64 lower-case letters, digits, _ or -, starting with a letter or digit"

// ValidSlug reports whether s is a slug a tool may have. The CLI checks a tool
// directory's slug with it before it sends anything.
func ValidSlug(s string) bool { return slugPattern.MatchString(s) }

// Service applies the catalogue's rules over the store.
type Service struct {
	st       *store.Store
	maxFiles int // SKRIP_UPLOAD_MAX_FILES: an input_schema's file field may ask for no more
	now      func() time.Time
	review   bool // SKRIP_REVIEW: only admins publish directly; authors submit (reviews.go)
	// reportsPerHour is the problem reports one user may make in an hour
	// (SKRIP_REPORTS_PER_HOUR, ReportsPerHour by default).
	reportsPerHour int
}

// New returns a Service over st. maxFiles is the upload cap (SKRIP_UPLOAD_MAX_FILES) that
// bounds the max of an input_schema's file field.
func New(st *store.Store, maxFiles int) *Service {
	return &Service{st: st, maxFiles: maxFiles, now: time.Now, reportsPerHour: ReportsPerHour}
}

// SetReportsPerHour sets the problem reports one user may make in an hour
// (SKRIP_REPORTS_PER_HOUR); n below 1 keeps ReportsPerHour.
func (s *Service) SetReportsPerHour(n int) {
	if n < 1 {
		n = ReportsPerHour
	}
	s.reportsPerHour = n
}

// CanAuthor reports whether u may create tools: an author, a reviewer or an admin.
func CanAuthor(u store.User) bool {
	return u.Role == store.RoleAuthor || u.Role == store.RoleReviewer || u.Role == store.RoleAdmin
}

// Owns reports whether u may change t: it is Maintains (maintainers.go), under the name
// the editing code has always used.
func Owns(u store.User, t store.Tool) bool { return Maintains(u, t) }

// List returns the tools u sees, by slug.
func (s *Service) List(ctx context.Context, u store.User) ([]store.Tool, error) {
	return s.st.Tools(ctx, u.ID, u.Role == store.RoleAdmin)
}

// Visible returns the tool ref (an id or a slug) if u may see it: published tools are
// everyone's, drafts their maintainers' and the admins'.
func (s *Service) Visible(ctx context.Context, u store.User, ref string) (store.Tool, error) {
	t, err := s.st.Tool(ctx, ref)
	if errors.Is(err, store.ErrNotFound) || (err == nil && t.PublishedVersionID == "" && !Owns(u, t)) {
		return store.Tool{}, errs.New(ErrNotFound, map[string]any{"tool": ref}, "no tool %q", ref)
	}
	return t, err
}

// Published returns the tool ref and its published version, for a production run.
func (s *Service) Published(ctx context.Context, u store.User, ref string) (store.Tool, store.ToolVersion, error) {
	t, err := s.Visible(ctx, u, ref)
	if err != nil {
		return t, store.ToolVersion{}, err
	}
	if t.PublishedVersionID == "" {
		return t, store.ToolVersion{}, errs.New(ErrUnpublished, map[string]any{"tool": t.Slug},
			"%s has no published version yet; publish one, or try it in the editor sandbox", t.Slug)
	}
	v, err := s.st.ToolVersion(ctx, t.PublishedVersionID)
	return t, v, err
}

// Owned returns the tool ref if u may change it. A tool u may see but not change gives
// ErrForbidden; one u may not see gives ErrNotFound.
func (s *Service) Owned(ctx context.Context, u store.User, ref string) (store.Tool, error) {
	t, err := s.Visible(ctx, u, ref)
	if err != nil {
		return t, err
	}
	if !Owns(u, t) {
		return store.Tool{}, errs.New(ErrForbidden, map[string]any{"tool": t.Slug}, "only the maintainers of %s or an admin may change it", t.Slug)
	}
	return t, nil
}

// OwnedVersion returns the version id and its tool if u maintains the tool (Maintains).
// Anyone else is answered as if it did not exist.
func (s *Service) OwnedVersion(ctx context.Context, u store.User, id string) (store.ToolVersion, store.Tool, error) {
	notFound := errs.New(ErrNoVersion, map[string]any{"version": id}, "no tool version %q", id)
	v, err := s.st.ToolVersion(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.ToolVersion{}, store.Tool{}, notFound
	}
	if err != nil {
		return store.ToolVersion{}, store.Tool{}, err
	}
	t, err := s.st.Tool(ctx, v.ToolID)
	if err != nil {
		return store.ToolVersion{}, store.Tool{}, err
	}
	if !Owns(u, t) {
		return store.ToolVersion{}, store.Tool{}, notFound
	}
	return v, t, nil
}

// Versions lists the versions of t, newest first, if u owns it.
func (s *Service) Versions(ctx context.Context, u store.User, t store.Tool) ([]store.ToolVersion, error) {
	if !Owns(u, t) {
		return nil, errs.New(ErrNotFound, map[string]any{"tool": t.Slug}, "no tool %q", t.Slug)
	}
	return s.st.Versions(ctx, t.ID)
}

// NewTool is what Create needs. InputSchema and SettingsSchema are JSON (docs/spec.md §5b), nil
// for none.
type NewTool struct {
	Slug, Title, Description, Source string
	Summary, UsageInstructions       string
	InputSchema, SettingsSchema      json.RawMessage
	Publish                          bool
	// Categories name the tool's categories (see SetCategories); nil for none.
	Categories []string
	// SyntaxError and SyntaxLine are the first version's syntax check, as on NewVersion.
	SyntaxError string
	SyntaxLine  int
}

// NewVersion is what AddVersion needs: the source and the version's schemas (nil: none).
type NewVersion struct {
	Source                      string
	InputSchema, SettingsSchema json.RawMessage
	// SyntaxError and SyntaxLine are where the caller's syntax check found the source
	// does not compile ("": it does, or it was not checked). A version that does not
	// compile is still stored, so no work is lost; it is marked.
	SyntaxError string
	SyntaxLine  int
	// Note says what changed ("" for none); at most MaxNoteBytes.
	Note string
}

// Create stores a tool and its first version, authored by u.
func (s *Service) Create(ctx context.Context, u store.User, n NewTool) (store.Tool, store.ToolVersion, error) {
	if !CanAuthor(u) {
		return store.Tool{}, store.ToolVersion{}, errs.New(ErrForbidden, map[string]any{"role": u.Role},
			"creating tools needs the author or admin role; you are %s", u.Role)
	}
	if !ValidSlug(n.Slug) {
		return store.Tool{}, store.ToolVersion{}, errs.New(ErrInvalid, map[string]any{"field": "slug", "value": n.Slug, "rule": "pattern"},
			"slug %q must be "+SlugRule, n.Slug)
	}
	info, err := checkInfo(store.Tool{Title: n.Title, Description: n.Description, Summary: n.Summary, UsageInstructions: n.UsageInstructions})
	if err != nil {
		return store.Tool{}, store.ToolVersion{}, err
	}
	if err := CheckCategoryNames(n.Categories); err != nil {
		return store.Tool{}, store.ToolVersion{}, err
	}
	if n.Publish {
		if err := s.MayPublish(u); err != nil {
			return store.Tool{}, store.ToolVersion{}, err
		}
	}
	now := s.now()
	v, err := s.newVersion(NewVersion{Source: n.Source, InputSchema: n.InputSchema, SettingsSchema: n.SettingsSchema,
		SyntaxError: n.SyntaxError, SyntaxLine: n.SyntaxLine}, u, now)
	if err != nil {
		return store.Tool{}, store.ToolVersion{}, err
	}
	t := info
	t.ID, t.Slug, t.AuthorID, t.CreatedAt, t.UpdatedAt = ids.New("t"), n.Slug, u.ID, now, now
	v.ToolID = t.ID
	t, err = s.st.CreateTool(ctx, t, v, n.Publish)
	if errors.Is(err, store.ErrConflict) {
		return store.Tool{}, store.ToolVersion{}, errs.New(ErrExists, map[string]any{"slug": n.Slug}, "a tool with slug %q already exists", n.Slug)
	}
	if err == nil {
		v, err = s.st.ToolVersion(ctx, v.ID) // with its number and its author's name
	}
	if err == nil && len(n.Categories) > 0 {
		_, err = s.SetCategories(ctx, u, t.ID, n.Categories)
	}
	return t, v, err
}

// AddVersion stores a new version of the tool ref, if u owns it.
func (s *Service) AddVersion(ctx context.Context, u store.User, ref string, n NewVersion) (store.ToolVersion, error) {
	t, err := s.Owned(ctx, u, ref)
	if err != nil {
		return store.ToolVersion{}, err
	}
	v, err := s.newVersion(n, u, s.now())
	if err != nil {
		return store.ToolVersion{}, err
	}
	v.ToolID = t.ID
	return s.storeVersion(ctx, v)
}

// newVersion checks n and makes it a version by u, its schemas in canonical form.
func (s *Service) newVersion(n NewVersion, u store.User, now time.Time) (store.ToolVersion, error) {
	if err := CheckSource(n.Source); err != nil {
		return store.ToolVersion{}, err
	}
	note, err := checkNote(n.Note)
	if err != nil {
		return store.ToolVersion{}, err
	}
	in, err := contract.ParseInputSchema(n.InputSchema, s.maxFiles)
	if err != nil {
		return store.ToolVersion{}, err
	}
	set, err := contract.ParseSettingsSchema(n.SettingsSchema)
	if err != nil {
		return store.ToolVersion{}, err
	}
	v := store.ToolVersion{ID: ids.New("v"), Source: n.Source, Entrypoint: "run_tool", CreatedBy: u.ID, CreatedAt: now,
		SyntaxError: strings.TrimSpace(n.SyntaxError), SyntaxLine: max(n.SyntaxLine, 0), Note: note}
	if len(v.SyntaxError) > maxSyntaxErrorBytes {
		v.SyntaxError = strings.ToValidUTF8(v.SyntaxError[:maxSyntaxErrorBytes], "") + "…"
	}
	if in != nil {
		v.InputSchema, _ = json.Marshal(in)
	}
	if set != nil {
		v.SettingsSchema, _ = json.Marshal(set)
	}
	return v, nil
}

// UpdateInfo sets the title, description, summary and usage instructions of the tool
// ref, if u owns it. Every value replaces the stored one; the title may not be empty.
func (s *Service) UpdateInfo(ctx context.Context, u store.User, ref, title, description, summary, usage string) (store.Tool, error) {
	t, err := s.Owned(ctx, u, ref)
	if err != nil {
		return store.Tool{}, err
	}
	info, err := checkInfo(store.Tool{Title: title, Description: description, Summary: summary, UsageInstructions: usage})
	if err != nil {
		return store.Tool{}, err
	}
	t.Title, t.Description, t.Summary, t.UsageInstructions = info.Title, info.Description, info.Summary, info.UsageInstructions
	now := s.now()
	if err := s.st.UpdateToolInfo(ctx, t, now); err != nil {
		return store.Tool{}, err
	}
	t.UpdatedAt = now
	return t, nil
}

// checkInfo checks a tool's title, description, summary and usage instructions and
// returns them trimmed: a title that is not empty, and each within its cap.
func checkInfo(t store.Tool) (store.Tool, error) {
	t.Title, t.Description, t.Summary = strings.TrimSpace(t.Title), strings.TrimSpace(t.Description), strings.TrimSpace(t.Summary)
	t.UsageInstructions = strings.TrimRight(t.UsageInstructions, " \t\r\n")
	if t.Title == "" {
		return t, errs.New(ErrInvalid, map[string]any{"field": "title", "rule": "required"}, "title is empty; give the tool a title people see")
	}
	for _, f := range []struct {
		name, value string
		limit       int
	}{{"title", t.Title, MaxTitleBytes}, {"description", t.Description, MaxDescBytes}, {"summary", t.Summary, MaxDescBytes},
		{"usage_instructions", t.UsageInstructions, MaxUsageBytes}} {
		switch {
		case len(f.value) > f.limit:
			return t, errs.New(ErrInvalid, map[string]any{"field": f.name, "rule": "max_length", "limit_bytes": f.limit},
				"%s is %d bytes; the limit is %d bytes", f.name, len(f.value), f.limit)
		case !utf8.ValidString(f.value):
			return t, errs.New(ErrInvalid, map[string]any{"field": f.name, "rule": "utf8"}, "%s is not valid UTF-8 text", f.name)
		}
	}
	return t, nil
}

// Publish makes version id what users of its tool run, if u owns the tool and may
// publish directly (MayPublish).
func (s *Service) Publish(ctx context.Context, u store.User, id string) (store.Tool, error) {
	v, t, err := s.OwnedVersion(ctx, u, id)
	if err != nil {
		return store.Tool{}, err
	}
	if err := s.MayPublish(u); err != nil {
		return store.Tool{}, err
	}
	now := s.now()
	if err := s.st.Publish(ctx, t.ID, v.ID, now); err != nil {
		return store.Tool{}, err
	}
	t.PublishedVersionID, t.UpdatedAt = v.ID, now
	return t, nil
}

// Unpublish takes the tool ref away from its users, if u owns it: it has no published
// version until one is published again. Its versions and runs stay.
func (s *Service) Unpublish(ctx context.Context, u store.User, ref string) (store.Tool, error) {
	t, err := s.Owned(ctx, u, ref)
	if err != nil {
		return store.Tool{}, err
	}
	now := s.now()
	if err := s.st.Unpublish(ctx, t.ID, now); err != nil {
		return store.Tool{}, err
	}
	t.PublishedVersionID, t.UpdatedAt = "", now
	return t, nil
}

// CheckSource refuses an empty source or one over MaxSourceBytes.
func CheckSource(src string) error {
	if strings.TrimSpace(src) == "" {
		return errs.New(ErrInvalid, map[string]any{"field": "source", "rule": "required"}, "source is empty; send the tool's Python code")
	}
	if len(src) > MaxSourceBytes {
		return errs.New(ErrTooLarge, map[string]any{"field": "source", "limit_bytes": MaxSourceBytes}, "source is %d bytes; the limit is %d", len(src), MaxSourceBytes)
	}
	return nil
}
