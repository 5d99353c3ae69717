package natsblob

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// SweepAge is how old the newest chunk of an unreferenced object version must be before
// Sweep removes it. A Put in progress publishes a chunk at least every few seconds and
// commits moments after its last one, so anything this old is debris of a crash.
const SweepAge = time.Hour

// Sweep removes what a crash can leave behind: chunks of object versions that no meta
// message names, once their newest chunk is older than SweepAge. It returns how many
// versions it removed.
func (s *Store) Sweep(ctx context.Context) (removed int, err error) {
	return s.sweep(ctx, time.Now().Add(-SweepAge))
}

func (s *Store) sweep(ctx context.Context, cutoff time.Time) (int, error) {
	// Read the chunk subjects before the metas: a version committed meanwhile then shows
	// up as referenced, and one not yet committed is too young to be removed.
	si, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(chunkSubjects(s.bucket)))
	if err != nil {
		return 0, fmt.Errorf("natsblob: sweep: %w", err)
	}
	infos, err := s.obs.List(ctx, jetstream.ListObjectsShowDeleted())
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0, fmt.Errorf("natsblob: sweep: %w", err)
	}
	referenced := map[string]bool{}
	for _, info := range infos {
		referenced[chunkSubject(s.bucket, info.NUID)] = true
	}
	removed := 0
	for subj := range si.State.Subjects {
		if referenced[subj] {
			continue
		}
		last, err := s.stream.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("natsblob: sweep: %w", err)
		}
		if !last.Time.Before(cutoff) {
			continue
		}
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			return removed, fmt.Errorf("natsblob: sweep: %w", err)
		}
		removed++
	}
	return removed, nil
}
