package run

import (
	"context"
	"errors"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/store"
)

// CancelUser cancels every queued or running run of userID, the way a user's own cancel
// does (locally, or through the cluster), and says how many it asked to stop: what
// disabling or deleting a user does.
func (s *Service) CancelUser(ctx context.Context, userID string) (int, error) {
	runs, err := s.st.UserRuns(ctx, userID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range runs {
		if store.Terminal(r.Status) {
			continue
		}
		ok, err := s.Cancel(ctx, r.ID)
		if err != nil {
			return n, err
		}
		if !ok && r.Status == store.StatusQueued {
			// Admitted but not yet handed to this server's pool (held by the run
			// queue): end it in the store.
			if ok, err = s.st.CancelQueuedRun(ctx, r.ID, "cancelled", s.now()); err != nil {
				return n, err
			}
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// PurgeUser cancels userID's unfinished runs and deletes every run of theirs with its
// artifacts' bytes (runs/<id>/). A run still stopping may store bytes afterwards; the
// janitor's orphan sweep removes those, as it does for any run that is gone.
func (s *Service) PurgeUser(ctx context.Context, userID string) (int, error) {
	if _, err := s.CancelUser(ctx, userID); err != nil {
		return 0, err
	}
	runs, err := s.st.UserRuns(ctx, userID)
	if err != nil {
		return 0, err
	}
	for _, r := range runs {
		if err := s.st.DeleteRunRecord(ctx, r.ID); err != nil {
			return 0, err
		}
		infos, err := s.blobs.List(ctx, "runs/"+r.ID+"/")
		if err != nil {
			return 0, err
		}
		for _, info := range infos {
			if err := s.blobs.Delete(ctx, info.Key); err != nil && !errors.Is(err, blob.ErrNotFound) {
				return 0, err
			}
		}
	}
	return len(runs), nil
}
