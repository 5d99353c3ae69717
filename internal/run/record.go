package run

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/hashcopy"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
)

var (
	// ErrNotFound means no such run, or one the user may not see.
	ErrNotFound = errors.New("run not found")
	// ErrNoArtifact means the run left no such artifact, or it expired.
	ErrNoArtifact = errors.New("artifact not found")
	// ErrInvalidQuery means a listing's filter, cursor or limit is not valid.
	ErrInvalidQuery = errors.New("invalid run query")
	// ErrCorrupt means a run's stored JSON cannot be read back: the record was damaged
	// after it was written. It is the server's fault, never the client's.
	ErrCorrupt = errors.New("run record corrupt")
)

// Get returns run id, whoever owns it.
func (s *Service) Get(ctx context.Context, id string) (store.Run, error) {
	rn, err := s.st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Run{}, errs.New(ErrNotFound, map[string]any{"run": id}, "no run %q", id)
	}
	return rn, err
}

// Owned returns run id if u started it or is an admin; anyone else is answered as if it
// did not exist.
func (s *Service) Owned(ctx context.Context, u store.User, id string) (store.Run, error) {
	rn, err := s.Get(ctx, id)
	if err == nil && rn.UserID != u.ID && u.Role != store.RoleAdmin {
		return store.Run{}, errs.New(ErrNotFound, map[string]any{"run": id}, "no run %q", id)
	}
	return rn, err
}

// ManifestFile is one file of a run's input manifest: what the tool was given.
type ManifestFile struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// Manifest is the input manifest stored with a run (names and bytes, for the audit).
type Manifest struct {
	Files []ManifestFile `json:"files"`
}

func manifestOf(m contract.Manifest) Manifest {
	out := Manifest{Files: make([]ManifestFile, 0, len(m.Files))}
	for _, f := range m.Files {
		out.Files = append(out.Files, ManifestFile{Name: f.Name, Bytes: f.Bytes})
	}
	return out
}

// decode reads the stored JSON field of run r into v; an empty field is v's zero value.
func decode(r store.Run, field, text string, v any) error {
	if text == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return fmt.Errorf("%w: the %s of run %s: %v", ErrCorrupt, field, r.ID, err)
	}
	return nil
}

// InputsOf are the inputs run r was started with (an action run's input). Numbers are
// json.Number, so they keep the digits they were stored with.
func InputsOf(r store.Run) (map[string]any, error) {
	if r.Inputs == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(r.Inputs))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: the inputs of run %s: %v", ErrCorrupt, r.ID, err)
	}
	return v, nil
}

// OutputsOf is what run r showed the user.
func OutputsOf(r store.Run) ([]contract.Output, error) {
	var v []contract.Output
	return v, decode(r, "outputs", r.Outputs, &v)
}

// NextActionsOf are the forms run r offered.
func NextActionsOf(r store.Run) ([]contract.NextAction, error) {
	var v []contract.NextAction
	return v, decode(r, "next_actions", r.NextActions, &v)
}

// ArtifactsOf are the files run r left in /work/output.
func ArtifactsOf(r store.Run) ([]Artifact, error) {
	var v []Artifact
	return v, decode(r, "artifacts", r.Artifacts, &v)
}

// ManifestOf is the input manifest of run r.
func ManifestOf(r store.Run) (Manifest, error) {
	var v Manifest
	err := decode(r, "input_manifest", r.InputManifest, &v)
	if v.Files == nil {
		v.Files = []ManifestFile{}
	}
	return v, err
}

// OpenArtifact opens the artifact at path ("output/<name>", or just "<name>") of run r.
// The caller closes the reader.
func (s *Service) OpenArtifact(ctx context.Context, r store.Run, path string) (Artifact, io.ReadCloser, blob.Info, error) {
	if !strings.HasPrefix(path, "output/") {
		path = "output/" + path
	}
	arts, err := ArtifactsOf(r)
	if err != nil {
		return Artifact{}, nil, blob.Info{}, err
	}
	for _, a := range arts {
		if a.Path != path {
			continue
		}
		if a.ExpiredAt != nil {
			return a, nil, blob.Info{}, errs.New(ErrNoArtifact, map[string]any{"run": r.ID, "path": path, "expired_at": a.ExpiredAt},
				"the artifact %s of run %s expired on %s: artifacts are kept for the server's SKRIP_RUN_ARTIFACTS_TTL after the run",
				path, r.ID, a.ExpiredAt.UTC().Format(time.RFC3339))
		}
		rc, info, err := s.blobs.Get(ctx, a.Key, 0, -1)
		if errors.Is(err, blob.ErrNotFound) {
			// Expired after r was read (the janitor clears the key, then deletes the
			// blob), or lost: either way the run no longer has it.
			return a, nil, blob.Info{}, errs.New(ErrNoArtifact, map[string]any{"run": r.ID, "path": path},
				"the artifact %s of run %s is no longer stored: artifacts are kept for the server's SKRIP_RUN_ARTIFACTS_TTL after the run", path, r.ID)
		}
		if err != nil {
			return a, nil, blob.Info{}, err
		}
		// Read whole, the bytes are checked against the checksum the run recorded: bytes
		// changed in the store end the read in hashcopy.ErrMismatch, not in a clean EOF.
		return a, struct {
			io.Reader
			io.Closer
		}{hashcopy.Verify(rc, info.Size, a.SHA256), rc}, info, nil
	}
	return Artifact{}, nil, blob.Info{}, errs.New(ErrNoArtifact, map[string]any{"run": r.ID, "path": path}, "run %s has no artifact %s", r.ID, path)
}

// UploadLimits are the limits of a run's upload.
func (s *Service) UploadLimits() upload.Limits { return s.cfg.Uploads.WithDefaults() }

// Query selects runs for a listing, newest first.
type Query struct {
	// UserID limits the listing to one user's runs; empty means every user's, which
	// only an admin may ask for.
	UserID string
	ToolID string
	// Status is one run status, or empty for all.
	Status string
	// Cursor is a page's NextCursor, or empty for the first page.
	Cursor string
	Limit  int
}

// Page is one page of a listing. NextCursor is empty on the last page.
type Page struct {
	Runs       []store.Run
	NextCursor string
}

// runID is what a cursor holds: the id of the last run of the page before. Other
// bytes decode too (a run's bare id is valid base64), and would page from the wrong
// place without a word.
var runID = regexp.MustCompile(`^r_[0-9A-Za-z]+$`)

// MaxPage is the most runs one page holds.
const MaxPage = 500

// Statuses are the run statuses a listing may filter by, in the order a run passes
// through them: what a filter offers, and what List's refusal of any other names.
func Statuses() []string {
	return []string{store.StatusQueued, store.StatusRunning, store.StatusSucceeded, store.StatusFailed, store.StatusTimedOut, store.StatusCancelled}
}

// List returns one page of the runs q selects, for viewer: their own runs, or, for an
// admin, anyone's. The cursor is opaque to clients; a bad one is refused, not ignored.
func (s *Service) List(ctx context.Context, viewer store.User, q Query) (Page, error) {
	if q.UserID == "" && viewer.Role != store.RoleAdmin {
		q.UserID = viewer.ID
	}
	if q.UserID != viewer.ID && viewer.Role != store.RoleAdmin {
		return Page{}, errs.New(ErrNotFound, map[string]any{"user": q.UserID}, "no runs of user %q to show", q.UserID)
	}
	if q.Limit < 1 || q.Limit > MaxPage {
		// The value as text, as a client's query parameter has it (and as a limit that is
		// no number is reported).
		v := strconv.Itoa(q.Limit)
		return Page{}, errs.New(ErrInvalidQuery, map[string]any{"field": "limit", "value": v}, "limit %q must be a whole number from 1 to %d", v, MaxPage)
	}
	if q.Status != "" && !store.ValidStatus(q.Status) {
		return Page{}, errs.New(ErrInvalidQuery, map[string]any{"field": "status", "value": q.Status},
			"status %q is not one of %s", q.Status, strings.Join(Statuses(), ", "))
	}
	before := ""
	if q.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || !runID.Match(b) {
			return Page{}, errs.New(ErrInvalidQuery, map[string]any{"field": "cursor"}, "cursor %q is not one this server gave out", q.Cursor)
		}
		before = string(b)
	}
	runs, err := s.st.ListRuns(ctx, store.RunFilter{UserID: q.UserID, ToolID: q.ToolID, Status: q.Status, Before: before, Limit: q.Limit + 1})
	if err != nil {
		return Page{}, err
	}
	var p Page
	if len(runs) > q.Limit {
		runs = runs[:q.Limit]
		p.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(runs[q.Limit-1].ID))
	}
	p.Runs = runs
	return p, nil
}
