package natsblob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Reading uses its own pull consumer instead of ObjectStore.Get, because
// nats.go's Get reader (1.55) gives the whole transfer one deadline (the JetStream
// default timeout when ctx has none), so a slow download fails after a few seconds, and
// it waits until that deadline when the object's chunks are purged mid-read. Here ctx
// bounds the transfer and Config.Timeout bounds the wait for each chunk.

const (
	// chunkPrefetch is how many chunks the consumer buffers ahead of the reader.
	chunkPrefetch = 16
	// stallCheck is how long a reader waits for a chunk before checking that the
	// object's chunks are still there.
	stallCheck = 250 * time.Millisecond
	// renewAfter is how long a reader waits for a chunk (at most half its idle timeout)
	// before it replaces its consumer.
	renewAfter = 2 * time.Second
)

// chunkReader streams an object's chunks in order and checks the digest when the last
// one arrives, before handing out its bytes.
type chunkReader struct {
	ctx     context.Context
	store   *Store
	subject string // the chunk subject being read
	cons    jetstream.Consumer
	iter    jetstream.MessagesContext
	idle    time.Duration
	seq     uint64 // the stream sequence of the last chunk received
	// delivered counts the messages of the current consumer; each has the next
	// consumer sequence, or one went missing.
	delivered uint64
	stale     []string // consumers given up and not yet deleted

	left uint64 // bytes of the object not yet received
	buf  []byte // received bytes not yet read
	hash hash.Hash
	want []byte
	err  error
	done bool
}

func (s *Store) openChunks(ctx context.Context, info *jetstream.ObjectInfo) (*chunkReader, error) {
	want, err := jetstream.DecodeObjectDigest(info.Digest)
	if err != nil {
		return nil, err
	}
	r := &chunkReader{
		ctx:     ctx,
		store:   s,
		subject: chunkSubject(s.bucket, info.NUID),
		idle:    s.timeout,
		left:    info.Size,
		hash:    sha256.New(),
		want:    want,
	}
	if err := r.reopen(time.Now().Add(leaderWait)); err != nil {
		r.dropStale()
		return nil, fmt.Errorf("open chunks: %w", err)
	}
	return r, nil
}

// open starts a consumer of the chunks after the last one received: an ephemeral pull
// consumer configured as nats.go configures an ordered one. nats.go's ordered consumer is
// not used because it recreates itself inside Next, with its own timeout of 10 s and
// regardless of the caller's context; the reader does that itself (renew), checking the
// order by the consumer's sequence.
func (r *chunkReader) open(ctx context.Context) error {
	cfg := jetstream.ConsumerConfig{
		FilterSubject:     r.subject,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: 5 * time.Minute,
		Replicas:          1,
		MemoryStorage:     true,
	}
	if r.seq > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = r.seq + 1
	}
	// The consumer is named here, so that one whose creation timed out but happened can
	// be deleted.
	cfg.Name = nuid.Next()
	cons, err := r.store.stream.CreateConsumer(ctx, cfg)
	if err != nil {
		r.stale = append(r.stale, cfg.Name)
		return err
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(chunkPrefetch))
	if err != nil {
		r.stale = append(r.stale, cfg.Name)
		return err
	}
	r.cons, r.iter, r.delivered = cons, iter, 0
	return nil
}

// renew replaces the consumer, which stopped delivering (its server may be gone, or the
// stream's leader changed), by a new one that starts after the last chunk received.
func (r *chunkReader) renew(giveUp time.Time, cause error) error {
	r.store.log.Warn("natsblob: a download's consumer stopped delivering; the download goes on with a new one",
		"bucket", r.store.bucket, "cause", cause.Error(), "stream_seq", r.seq)
	r.stop()
	if err := r.reopen(giveUp); err != nil {
		return fmt.Errorf("reopen chunks after stream sequence %d: %w", r.seq, err)
	}
	return nil
}

// reopen opens a consumer, trying again until giveUp while the stream (or the
// cluster, which creates consumers) does not answer. The first tries are short, since a
// cluster that lost its meta leader answers nothing until it elects another.
func (r *chunkReader) reopen(giveUp time.Time) error {
	wait := min(r.idle, 2*time.Second)
	for {
		ctx, cancel := context.WithTimeout(r.ctx, wait)
		err := r.open(ctx)
		cancel()
		if err == nil {
			r.dropStale()
			return nil
		}
		if !transient(err) || r.ctx.Err() != nil || time.Now().After(giveUp) {
			return err
		}
		if err := r.store.waitLeader(r.ctx, giveUp); err != nil {
			return err
		}
		wait = min(2*wait, r.idle)
	}
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for len(r.buf) == 0 {
		if r.left == 0 {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			r.err = err
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// skip drops the first off bytes without copying them out.
func (r *chunkReader) skip(off int64) error {
	for off > 0 {
		if len(r.buf) == 0 {
			if r.left == 0 {
				return nil
			}
			if err := r.next(); err != nil {
				r.err = err
				return err
			}
		}
		k := min(off, int64(len(r.buf)))
		r.buf = r.buf[k:]
		off -= k
	}
	return nil
}

// next receives one chunk into r.buf.
func (r *chunkReader) next() error {
	msg, err := r.receive()
	if err != nil {
		return err
	}
	data := msg.Data()
	if uint64(len(data)) > r.left {
		return fmt.Errorf("object holds more bytes than its recorded size")
	}
	r.left -= uint64(len(data))
	r.hash.Write(data)
	if r.left == 0 && !bytes.Equal(r.hash.Sum(nil), r.want) {
		return jetstream.ErrDigestMismatch
	}
	r.buf = data
	return nil
}

// errGap is a message of the consumer that did not arrive.
var errGap = errors.New("a chunk went missing in delivery")

// receive waits for the next chunk. While it waits it checks every stallCheck whether
// the chunks still exist, so a reader of an object replaced or deleted meanwhile fails
// at once instead of after the whole idle timeout. When no chunk came for renewAfter, or
// the consumer failed or skipped a message, it renews the consumer. It gives up when no
// chunk came for the idle timeout, which a renewal extends up to leaderWait.
func (r *chunkReader) receive() (jetstream.Msg, error) {
	start := time.Now()
	deadline := start.Add(r.idle)
	renewAt := start.Add(min(renewAfter, r.idle/2))
	for {
		wait := max(min(stallCheck, time.Until(deadline)), time.Millisecond)
		ctx, cancel := context.WithTimeout(r.ctx, wait)
		m, err := r.iter.Next(jetstream.NextContext(ctx))
		cancel()
		if err == nil {
			md, merr := m.Metadata()
			if merr != nil {
				return nil, merr
			}
			if md.Sequence.Consumer == r.delivered+1 {
				r.delivered++
				r.seq = md.Sequence.Stream
				return m, nil
			}
			err = errGap
		}
		if cerr := r.ctx.Err(); cerr != nil {
			return nil, cerr
		}
		now := time.Now()
		if !now.Before(deadline) {
			return nil, fmt.Errorf("no chunk arrived within %s with %d bytes still to come", now.Sub(start).Round(time.Millisecond), r.left)
		}
		if r.purged() {
			return nil, fmt.Errorf("object was overwritten or deleted while being read, %d bytes before its end", r.left)
		}
		if errors.Is(err, context.DeadlineExceeded) && now.Before(renewAt) {
			continue
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no chunk for %s", now.Sub(start).Round(time.Millisecond))
		}
		if err := r.renew(start.Add(leaderWait), err); err != nil {
			return nil, err
		}
		now = time.Now()
		renewAt = now.Add(min(renewAfter, r.idle/2))
		if ext := now.Add(r.idle); ext.After(deadline) {
			deadline = ext
		}
		if limit := start.Add(leaderWait); deadline.After(limit) && limit.After(start.Add(r.idle)) {
			deadline = limit
		}
	}
}

// purged reports whether the chunks being read are gone from the stream. Any replica
// answers first (the bucket allows direct gets), so the check costs the leader nothing
// while the chunks are there; a replica that finds none may lag behind, so the leader
// confirms. Without an answer from the leader, the chunks are taken to be there.
func (r *chunkReader) purged() bool {
	ctx, cancel := context.WithTimeout(r.ctx, min(r.idle, time.Second))
	defer cancel()
	if _, err := r.store.stream.GetLastMsgForSubject(ctx, r.subject); !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false
	}
	_, err := r.store.lastStored(ctx, r.subject)
	return errors.Is(err, jetstream.ErrMsgNotFound)
}

// Close stops the consumer and deletes it, and any it replaced, from the server. While
// the cluster does not answer (it may be electing a leader), it tries again for up to
// the idle timeout; a consumer left behind is removed by the server once inactive.
func (r *chunkReader) Close() error {
	if r.done {
		return nil
	}
	r.done = true
	r.stop()
	r.dropStale()
	if len(r.stale) == 0 {
		return nil
	}
	// A consumer on a node that stopped is deleted once the cluster has elected its
	// leaders again, which can take longer than a reader should wait: it is tried in
	// the background for a minute (and its InactiveThreshold removes it anyway).
	go func() {
		giveUp := time.Now().Add(staleConsumerPatience)
		for r.dropStale(); len(r.stale) > 0 && time.Now().Before(giveUp); r.dropStale() {
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return nil
}

// staleConsumerPatience is how long a closed reader keeps trying to delete consumers
// the cluster could not delete at once.
const staleConsumerPatience = time.Minute

// stop stops the consumer, which is deleted by dropStale.
func (r *chunkReader) stop() {
	if r.iter == nil {
		return
	}
	r.iter.Stop()
	r.stale = append(r.stale, r.cons.CachedInfo().Name)
	r.cons, r.iter = nil, nil
}

// dropStale deletes the consumers stopped; those it cannot delete it keeps for later.
func (r *chunkReader) dropStale() {
	var left []string
	for _, name := range r.stale {
		if !r.deleteConsumer(name) {
			left = append(left, name)
		}
	}
	r.stale = left
}

func (r *chunkReader) deleteConsumer(name string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), min(r.idle, 2*time.Second))
	defer cancel()
	err := r.store.stream.DeleteConsumer(ctx, name)
	return err == nil || errors.Is(err, jetstream.ErrConsumerNotFound)
}
