package natsblob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// SweepAge is how old the newest chunk of an unreferenced object version written by
// another node must be before Sweep removes it. That node's Put may still be in flight,
// fed by a slow client; it publishes a chunk at least every 128 KiB it receives. A node
// removes its own crashed Puts' chunks when it starts, without waiting.
const SweepAge = time.Hour

// MarkerAge is how long a delete marker stays in the bucket. Watchers see a delete as it
// happens; a watcher that replays the bucket later than this no longer does. Without a
// limit every key ever deleted would leave a meta message behind for good.
const MarkerAge = 24 * time.Hour

// Sweep removes what a crash can leave behind: chunks of object versions that no live
// meta message names and that no Put of this store is writing. Chunks of this node (see
// Config.Node), or every such chunk when the bucket is Config.Exclusive, go at once;
// another node's only once their newest chunk is older than SweepAge. It also drops delete
// markers older than MarkerAge. It returns how many object versions' chunks it removed.
func (s *Store) Sweep(ctx context.Context) (removed int, err error) {
	return s.sweep(ctx, time.Now().Add(-SweepAge), time.Now().Add(-MarkerAge))
}

func (s *Store) sweep(ctx context.Context, cutoff, markerCutoff time.Time) (int, error) {
	// Read the chunk subjects, then the Puts in flight, then the metas. A subject seen
	// here was first written by a Put that was in flight before it: if that Put is no
	// longer in flight at the second step, it has committed (and its meta shows in the
	// third) or failed, and then its chunks are debris.
	si, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(chunkSubjects(s.bucket)))
	if err != nil {
		return 0, fmt.Errorf("natsblob: sweep: %w", err)
	}
	inFlight := map[string]bool{}
	for id := range s.inPuts.Snapshot() {
		inFlight[chunkSubject(s.bucket, id)] = true
	}
	infos, err := s.obs.List(ctx, jetstream.ListObjectsShowDeleted())
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0, fmt.Errorf("natsblob: sweep: %w", err)
	}
	referenced := map[string]bool{}
	var oldMarkers []string
	for _, info := range infos {
		switch {
		case !info.Deleted:
			referenced[chunkSubject(s.bucket, info.NUID)] = true
		case info.ModTime.Before(markerCutoff):
			oldMarkers = append(oldMarkers, info.Name)
		}
	}
	ownPrefix := chunkSubject(s.bucket, s.node+"_")
	removed := 0
	for subj := range si.State.Subjects {
		if referenced[subj] || inFlight[subj] {
			continue
		}
		if !s.exclusive && (s.node == "" || !strings.HasPrefix(subj, ownPrefix)) {
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
		}
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			return removed, fmt.Errorf("natsblob: sweep: %w", err)
		}
		removed++
	}
	for _, name := range oldMarkers {
		if err := s.dropMarker(ctx, name, markerCutoff); err != nil {
			return removed, fmt.Errorf("natsblob: sweep: %w", err)
		}
	}
	return removed, nil
}

// dropMarker purges name's meta subject if its last message is still a delete marker
// older than cutoff. The purge stops at that message, so a Put committed meanwhile stays.
func (s *Store) dropMarker(ctx context.Context, name string, cutoff time.Time) error {
	subj := metaSubject(s.bucket, name)
	m, err := s.stream.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(m.Data, &info); err != nil || !info.Deleted || !m.Time.Before(cutoff) {
		return nil
	}
	return s.stream.Purge(ctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeSequence(m.Sequence+1))
}
