package natsblob

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
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

// pubWindow is how many chunk publishes may await their ack.
const pubWindow = 32

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
		ObjectMeta: describe(key, opts),
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

// describe is the meta of a new object: its name, content type, and what opts say the
// bytes are, as metadata and a one-line description.
func describe(key string, opts blob.PutOptions) jetstream.ObjectMeta {
	m := jetstream.ObjectMeta{Name: key, Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunkSize}}
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

// writeChunks publishes r in chunks on subj, keeping up to pubWindow publishes in flight,
// and fills in info's size, chunk count and digest. It checks ctx before every read and
// every wait.
func (s *Store) writeChunks(ctx context.Context, subj string, r io.Reader, info *jetstream.ObjectInfo) (err error) {
	h := sha256.New()
	// A chunk's buffer is held until its publish is acknowledged (nats.go may send a
	// message again until then), then reused: a Put allocates at most pubWindow+1 chunk
	// buffers whatever its size, instead of one per chunk for the collector to catch up with.
	type inFlight struct {
		f   jetstream.PubAckFuture
		buf []byte
	}
	var pending []inFlight
	var free [][]byte
	defer func() {
		// Before the caller purges, let every publish in flight land or time out, or it
		// could land after the purge.
		if err != nil {
			for _, p := range pending {
				select {
				case <-p.f.Ok():
				case <-p.f.Err():
				}
			}
		}
	}()
	// waitFirst waits for the oldest publish. A future's channels deliver once, so it is
	// dropped from pending as soon as it resolves.
	waitFirst := func() error {
		p := pending[0]
		select {
		case <-p.f.Ok():
			pending = pending[1:]
			free = append(free, p.buf)
			return nil
		case err := <-p.f.Err():
			pending = pending[1:]
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		var buf []byte
		if k := len(free); k > 0 {
			buf, free = free[k-1], free[:k-1]
		} else {
			buf = make([]byte, chunkSize)
		}
		n, rerr := readChunk(ctx, r, buf)
		if rerr != nil && rerr != io.EOF {
			return rerr
		}
		if n > 0 {
			h.Write(buf[:n])
			f, err := s.js.PublishMsgAsync(&nats.Msg{Subject: subj, Data: buf[:n]})
			if err != nil {
				return err
			}
			pending = append(pending, inFlight{f, buf})
			info.Size += uint64(n)
			info.Chunks++
			if len(pending) >= pubWindow {
				if err := waitFirst(); err != nil {
					return err
				}
			}
		} else {
			free = append(free, buf)
		}
		if rerr == io.EOF {
			break
		}
	}
	for len(pending) > 0 {
		if err := waitFirst(); err != nil {
			return err
		}
	}
	// A cancellation that races the last read still stores nothing.
	if err := ctx.Err(); err != nil {
		return err
	}
	info.Digest = digestPrefix + base64.URLEncoding.EncodeToString(h.Sum(nil))
	return nil
}

// readChunk fills buf from r, checking ctx before each read. It returns a short count
// only with io.EOF or r's error, which it passes through unchanged.
func readChunk(ctx context.Context, r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return n, io.EOF
		}
		if err != nil {
			return n, fmt.Errorf("read: %w", err)
		}
	}
	return n, nil
}

// commit makes info the object under key by publishing its meta message only if the
// key's meta subject has not changed since it was read, retrying when another writer got
// there first. It returns the version it replaced, if any. The caller's context is not
// used: once the data is in, the commit is one message and is not abandoned half way.
func (s *Store) commit(key string, info *jetstream.ObjectInfo) (*jetstream.ObjectInfo, error) {
	data, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	subj := metaSubject(s.bucket, key)
	for range casAttempts {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		old, seq, err := s.lastMeta(ctx, subj)
		if err != nil {
			cancel()
			return nil, err
		}
		msg := nats.NewMsg(subj)
		msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		msg.Data = data
		_, err = s.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(seq))
		cancel()
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return old, nil
	}
	return nil, fmt.Errorf("gave up after %d attempts racing other writers of the key", casAttempts)
}

// committed reports whether key's meta names the version id: a commit whose publish
// timed out may still have been stored.
func (s *Store) committed(key, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	info, _, err := s.lastMeta(ctx, metaSubject(s.bucket, key))
	return err == nil && info != nil && info.NUID == id
}

// lastMeta reads the meta message on subj and its stream sequence; a subject without
// messages gives a nil info and sequence 0.
func (s *Store) lastMeta(ctx context.Context, subj string) (*jetstream.ObjectInfo, uint64, error) {
	m, err := s.stream.GetLastMsgForSubject(ctx, subj)
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
	_, err = s.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(seq))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil // replaced meanwhile; the replacing Put purges the chunks read here
	}
	if err != nil {
		return fmt.Errorf("natsblob: delete %s: %w", key, err)
	}
	s.purge(chunkSubject(s.bucket, info.NUID))
	return nil
}

// purge removes every message on subj, best effort and regardless of the caller's
// context: what it misses, Sweep removes later.
func (s *Store) purge(subj string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	_ = s.stream.Purge(ctx, jetstream.WithPurgeSubject(subj))
}
