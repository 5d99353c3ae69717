package natsblob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/skrip-dev/skrip/internal/blob"
)

// Writes do not use ObjectStore.Put. Tests against nats.go 1.55 showed two ways it breaks
// the all-or-nothing contract of blob.Store:
//
//   - it purges a failed upload's chunks with the context given to Put, so after a
//     cancellation the partial chunks stay in the bucket for good;
//   - when a chunk publish is refused (for example the bucket is full) it still
//     publishes the meta message, which replaces the previous version with an object
//     whose chunks it then purges: the old bytes are lost and the key reads as broken.
//
// Put therefore publishes the chunks itself under a fresh NUID, which nothing references,
// and commits by publishing the meta message with an expected last subject sequence, a
// compare-and-swap against concurrent writers. Only after the commit are the previous
// version's chunks purged. Any failure before the commit purges the new chunks; a crash
// leaves unreferenced chunks, which Sweep removes.

// casAttempts bounds retries of a commit that lost a race with another writer.
const casAttempts = 16

// Put streams r into the bucket under key.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (blob.Info, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, fmt.Errorf("natsblob: put %s: %w", key, err)
	}
	id := s.startPut()
	defer s.endPut(id)
	subj := chunkSubject(s.bucket, id)
	info := &jetstream.ObjectInfo{
		ObjectMeta: describe(key, opts, s.chunk),
		Bucket:     s.bucket,
		NUID:       id,
	}
	if err := s.writeChunks(ctx, subj, r, info); err != nil {
		s.purge(subj)
		return blob.Info{}, fmt.Errorf("natsblob: put %s: %w", key, err)
	}
	old, err := s.commit(key, info)
	if err != nil {
		if !s.committed(key, id) {
			s.purge(subj)
			return blob.Info{}, fmt.Errorf("natsblob: put %s: commit: %w", key, err)
		}
	}
	if old != nil && old.NUID != id && old.Chunks > 0 {
		s.purge(chunkSubject(s.bucket, old.NUID))
	}
	info.ModTime = time.Now().UTC()
	bi, err := toInfo(info)
	if err != nil {
		return blob.Info{}, fmt.Errorf("natsblob: put %s: %w", key, err)
	}
	return bi, nil
}

// startPut picks the NUID of a new object version, which names its chunk subject, and
// marks it in flight until endPut, so that Sweep leaves its chunks alone. The NUID starts
// with the store's node, so that this node's sweep knows a crashed Put's chunks as its own.
func (s *Store) startPut() string {
	id := nuid.Next()
	if s.node != "" {
		id = s.node + "_" + id
	}
	s.inPuts.Start(id)
	return id
}

func (s *Store) endPut(id string) { s.inPuts.End(id) }

// Metadata keys on every object, for standard NATS tooling (`nats object info`).
const (
	metaFileKey = "skrip-file-key"
	metaOwner   = "skrip-owner"
	metaName    = "skrip-name"
	// maxLabel bounds each label, well within a meta message.
	maxLabel = 1024
)

// describe is the meta of a new object written in chunks of chunk bytes: its name,
// content type, and what opts say the bytes are, as metadata and a one-line description.
func describe(key string, opts blob.PutOptions, chunk int) jetstream.ObjectMeta {
	m := jetstream.ObjectMeta{Name: key, Opts: &jetstream.ObjectMetaOptions{ChunkSize: uint32(chunk)}}
	if opts.ContentType != "" {
		m.Headers = nats.Header{}
		m.Headers.Set(headerContentType, opts.ContentType)
	}
	var desc []string
	for _, l := range []struct{ meta, text, v string }{
		{metaFileKey, "file %s", opts.FileKey},
		{metaOwner, "owner %s", opts.Owner},
		{metaName, "name %q", opts.Name},
	} {
		v := label(l.v)
		if v == "" {
			continue
		}
		if m.Metadata == nil {
			m.Metadata = map[string]string{}
		}
		m.Metadata[l.meta] = v
		desc = append(desc, fmt.Sprintf(l.text, v))
	}
	m.Description = strings.Join(desc, ", ")
	return m
}

// label makes v valid UTF-8 of at most maxLabel bytes.
func label(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	for len(v) > maxLabel {
		_, n := utf8.DecodeLastRuneInString(v)
		v = v[:len(v)-n]
	}
	return v
}

// commit makes info the object under key by publishing its meta message only if the
// key's meta subject has not changed since it was read, retrying when another writer got
// there first. It returns the version it replaced, if any. The caller's context is not
// used: once the data is in, the commit is one message and is not abandoned half way.
//
// While the stream has no leader, the commit is tried again for up to leaderWait. A
// publish whose ack was lost may have been stored: the meta read before the next try
// then names this version, or the stream, which remembers the meta's message ID,
// reports the next publish as a duplicate; either way the version replaced is the one
// read before the lost ack.
func (s *Store) commit(key string, info *jetstream.ObjectInfo) (*jetstream.ObjectInfo, error) {
	data, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	subj := metaSubject(s.bucket, key)
	var lost *jetstream.ObjectInfo // what a publish of unknown outcome would have replaced
	var giveUp time.Time
	races := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		old, seq, err := s.lastMeta(ctx, subj)
		if err == nil && old != nil && old.NUID == info.NUID {
			cancel()
			return lost, nil
		}
		if err == nil {
			msg := nats.NewMsg(subj)
			msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
			msg.Header.Set(jetstream.MsgIDHeader, info.NUID+".meta")
			msg.Data = data
			var ack *jetstream.PubAck
			ack, err = s.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(seq))
			switch {
			case err == nil && ack.Duplicate:
				cancel()
				return lost, nil
			case err == nil:
				cancel()
				return old, nil
			case errors.Is(err, jetstream.ErrKeyExists):
				cancel()
				if races++; races == casAttempts {
					return nil, fmt.Errorf("gave up after %d attempts racing other writers of the key", casAttempts)
				}
				continue
			case transient(err):
				lost = old
			}
		}
		cancel()
		if !transient(err) {
			return nil, err
		}
		if giveUp.IsZero() {
			giveUp = time.Now().Add(leaderWait)
		}
		if time.Now().After(giveUp) {
			return nil, fmt.Errorf("gave up after %s: %w", leaderWait, err)
		}
		if err := s.waitLeader(context.Background(), giveUp); err != nil {
			return nil, err
		}
	}
}

// committed reports whether key's meta names the version id: a commit whose publish
// timed out may still have been stored.
func (s *Store) committed(key, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	info, _, err := s.lastMeta(ctx, metaSubject(s.bucket, key))
	return err == nil && info != nil && info.NUID == id
}

// lastMeta reads the meta message on subj and its stream sequence from the stream's
// leader, whom a write with an expected sequence goes to; a subject without messages
// gives a nil info and sequence 0.
func (s *Store) lastMeta(ctx context.Context, subj string) (*jetstream.ObjectInfo, uint64, error) {
	m, err := s.lastStored(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(m.Data, &info); err != nil {
		return nil, 0, fmt.Errorf("meta message %d on %s: %w", m.Sequence, subj, err)
	}
	return &info, m.Sequence, nil
}

// Delete replaces key's meta message by the Object Store's delete marker (the meta with
// deleted set, no size, no chunks), as nats.go's ObjectStore.Delete does, so that watchers
// of the bucket see the delete; then it purges the chunks. The marker is published only
// if the meta is still the one read: when another writer committed a version meanwhile,
// that Put happened after this Delete and its version stays.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	subj := metaSubject(s.bucket, key)
	info, seq, err := s.lastMeta(ctx, subj)
	if err != nil {
		return fmt.Errorf("natsblob: delete %s: %w", key, err)
	}
	if info == nil || info.Deleted {
		return fmt.Errorf("natsblob: delete %s: %w", key, blob.ErrNotFound)
	}
	marker := *info
	marker.Deleted = true
	marker.Size, marker.Chunks, marker.Digest = 0, 0, ""
	marker.ModTime = time.Time{}
	data, err := json.Marshal(&marker)
	if err != nil {
		return fmt.Errorf("natsblob: delete %s: %w", key, err)
	}
	msg := nats.NewMsg(subj)
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	msg.Data = data
	ack, err := s.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(seq))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil // replaced meanwhile; the replacing Put purges the chunks read here
	}
	if err != nil {
		return fmt.Errorf("natsblob: delete %s: %w", key, err)
	}
	s.purge(chunkSubject(s.bucket, info.NUID))
	if s.dropMarkers {
		// The marker and what came before it go; a Put of the key after it stays.
		pctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		_ = s.stream.Purge(pctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeSequence(ack.Sequence+1))
	}
	return nil
}

// purge removes every message on subj, best effort and regardless of the caller's
// context: what it misses, Sweep removes later.
func (s *Store) purge(subj string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	_ = s.stream.Purge(ctx, jetstream.WithPurgeSubject(subj))
}
