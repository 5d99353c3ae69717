package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/store"
)

// Expired is what one artifact expiry pass removed.
type Expired struct {
	Runs  int   // runs whose artifacts expired
	Files int   // artifacts
	Bytes int64 // their bytes
}

// ExpireArtifacts deletes the artifacts of runs that finished more than ttl ago. The run
// stays, and each artifact stays listed with expired_at set and no blob; what the run
// held no longer counts against its user's quota. The row is
// changed before the blobs go: a crash in between leaves blobs no row names, which
// SweepOrphans removes. ttl 0 keeps artifacts for good.
func (s *Service) ExpireArtifacts(ctx context.Context, ttl time.Duration) (Expired, error) {
	var out Expired
	if ttl <= 0 {
		return out, nil
	}
	now := s.now()
	after := ""
	for {
		runs, err := s.st.RunsWithStoredArtifacts(ctx, now.Add(-ttl), after, 200)
		if err == nil && len(runs) == 0 {
			// Runs that kept no artifacts hold their record until then too.
			_, err = s.st.ReleaseFinishedRuns(ctx, now.Add(-ttl))
		}
		if err != nil || len(runs) == 0 {
			return out, err
		}
		for _, r := range runs {
			after = r.ID
			var arts []Artifact
			if err := json.Unmarshal([]byte(r.Artifacts), &arts); err != nil {
				s.log.Error("a run's artifacts are not valid JSON; left alone", "run", r.ID, "error", err)
				continue
			}
			var keys []string
			var bytes int64
			for i := range arts {
				if arts[i].Key == "" {
					continue
				}
				keys = append(keys, arts[i].Key)
				bytes += arts[i].Bytes
				arts[i].Key, arts[i].ExpiredAt = "", &now
			}
			ok, err := s.st.ReplaceRunArtifacts(ctx, r.ID, r.Artifacts, mustJSON(arts))
			if err != nil {
				return out, err
			}
			if !ok {
				continue // changed meanwhile; the next pass looks again
			}
			for _, k := range keys {
				if err := s.blobs.Delete(ctx, k); err != nil && !errors.Is(err, blob.ErrNotFound) {
					s.log.Warn("deleting an expired artifact; the janitor's orphan sweep retries", "run", r.ID, "key", k, "error", err)
				}
			}
			out.Runs++
			out.Files += len(keys)
			out.Bytes += bytes
		}
	}
}

// SweepOrphans deletes the blobs under runs/ that no run refers to: those of runs that
// are gone (their tool or user was deleted), and those a finished run does not list (a
// crash or a failure between storing artifacts and recording the run). A run still
// queued or running is collecting its artifacts and is left alone. It returns how many
// blobs it deleted.
func (s *Service) SweepOrphans(ctx context.Context) (int, error) {
	infos, err := s.blobs.List(ctx, "runs/")
	if err != nil {
		return 0, fmt.Errorf("listing run artifacts: %w", err)
	}
	byRun := map[string][]string{}
	var order []string
	for _, info := range infos {
		id, _, _ := strings.Cut(strings.TrimPrefix(info.Key, "runs/"), "/")
		if _, ok := byRun[id]; !ok {
			order = append(order, id)
		}
		byRun[id] = append(byRun[id], info.Key)
	}
	removed := 0
	for _, id := range order {
		keep := map[string]bool{}
		r, err := s.st.RunArtifactsOf(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return removed, err
		case !store.Terminal(r.Status):
			continue
		default:
			var arts []Artifact
			if err := json.Unmarshal([]byte(r.Artifacts), &arts); err != nil {
				continue // unreadable: keep its blobs rather than guess
			}
			for _, a := range arts {
				keep[a.Key] = true
			}
		}
		for _, k := range byRun[id] {
			if keep[k] {
				continue
			}
			err := s.blobs.Delete(ctx, k)
			if errors.Is(err, blob.ErrNotFound) {
				continue
			}
			if err != nil {
				return removed, fmt.Errorf("deleting an orphan artifact %s: %w", k, err)
			}
			removed++
		}
	}
	return removed, nil
}
