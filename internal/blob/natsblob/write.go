package natsblob

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A reader of an object takes its chunks in the order of their stream sequences, so the
// chunks must be stored in order and once each. Publishes are pipelined, and across a
// leader change some of those in flight are stored and some are not, in any pattern, and
// their acks may be lost either way. Every chunk therefore carries a message ID, which
// the stream deduplicates, and a Put that meets a failed ack waits for the stream to
// answer again, reads what it holds of the upload past the last chunk known in place,
// keeps those that continue the sequence and deletes the others, and publishes the rest
// again. A deleted chunk is published again under a new ID: the stream remembers the
// old one and would drop the copy.

// pubWindow is how many chunk publishes may await their ack: 4 MiB of chunks. nats.go's
// ObjectStore.Put bounds them only by the connection's limit of pending async publishes
// (4000 by default, 500 MiB of its chunks); a window of 16 to 64 made no measurable
// difference to throughput here.
const pubWindow = 16

// ackStall is how long a Put waits for an ack before it checks whether the stream's
// leader has moved.
const ackStall = time.Second

// errLeaderMoved is an ack that did not come while the stream's leader changed.
var errLeaderMoved = errors.New("the stream's leader changed")

// errOutOfOrder is an ack whose sequence does not follow the previous chunk's: a chunk
// was stored out of order (the stream deduplicated it against an earlier copy).
var errOutOfOrder = errors.New("a chunk was stored out of order")

// chunkWriter publishes the chunks of one object version, keeping up to pubWindow
// publishes in flight.
type chunkWriter struct {
	s    *Store
	ctx  context.Context
	subj string
	id   string // the version's NUID

	pending []*chunk // published and not yet known to be in place, in order
	// A chunk's buffer is held until it is known in place (nats.go may send a message
	// again until its publish resolves), then reused: a Put allocates at most
	// pubWindow+1 chunk buffers whatever its size.
	free [][]byte

	stored     uint32    // chunks 0..stored-1 are on subj in this order
	last       uint64    // the stream sequence of chunk stored-1
	recoveries int       // how often publishes failed and were repaired
	failedAt   time.Time // when the current run of failures began; zero while acks arrive
}

type chunk struct {
	k     uint32
	data  []byte
	msgID string
	f     jetstream.PubAckFuture // nil once its outcome is taken, or when the publish failed
	err   error                  // why the publish or its ack failed
}

// writeChunks publishes r in chunks on subj and fills in info's size, chunk count and
// digest. It checks ctx before every read and every wait.
func (s *Store) writeChunks(ctx context.Context, subj string, r io.Reader, info *jetstream.ObjectInfo) (err error) {
	w := &chunkWriter{s: s, ctx: ctx, subj: subj, id: info.NUID}
	defer func() {
		// Before the caller purges, let every publish in flight land or time out, or it
		// could land after the purge.
		if err != nil {
			w.drain(context.Background())
		}
	}()
	h := sha256.New()
	for {
		buf := w.buffer()
		n, rerr := readChunk(ctx, r, buf)
		if rerr != nil && rerr != io.EOF {
			return rerr
		}
		if n > 0 {
			h.Write(buf[:n])
			c := &chunk{k: info.Chunks, data: buf[:n], msgID: fmt.Sprintf("%s.%d", w.id, info.Chunks)}
			if err := w.publish(c); err != nil {
				return err
			}
			w.pending = append(w.pending, c)
			info.Size += uint64(n)
			info.Chunks++
			for len(w.pending) >= pubWindow {
				if err := w.confirmFirst(); err != nil {
					return err
				}
			}
		} else {
			w.free = append(w.free, buf)
		}
		if rerr == io.EOF {
			break
		}
	}
	for len(w.pending) > 0 {
		if err := w.confirmFirst(); err != nil {
			return err
		}
	}
	// A cancellation that races the last read still stores nothing.
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.recoveries > 0 {
		if err := w.verify(info.Chunks); err != nil {
			return err
		}
	}
	info.Digest = digestPrefix + base64.URLEncoding.EncodeToString(h.Sum(nil))
	return nil
}

func (w *chunkWriter) buffer() []byte {
	if k := len(w.free); k > 0 {
		buf := w.free[k-1]
		w.free = w.free[:k-1]
		return buf
	}
	return make([]byte, w.s.chunk)
}

// publish sends c without waiting for its ack. A failure that a leader change explains is
// kept in c for confirmFirst; any other ends the Put.
func (w *chunkWriter) publish(c *chunk) error {
	msg := &nats.Msg{Subject: w.subj, Data: c.data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, c.msgID)
	// No retries by nats.go: they would send the message again from a buffer that may
	// be reused once its future is given up.
	c.f, c.err = w.s.js.PublishMsgAsync(msg, jetstream.WithRetryAttempts(0))
	if c.err != nil && !transient(c.err) {
		return c.err
	}
	return nil
}

// confirmFirst waits for the oldest chunk in flight to be stored, repairing the upload
// when its publish failed in a way that a leader change explains.
func (w *chunkWriter) confirmFirst() error {
	c := w.pending[0]
	var ack *jetstream.PubAck
	err := c.err
	if c.f != nil {
		stall := time.NewTimer(ackStall)
		defer stall.Stop()
		for ack == nil && err == nil {
			select {
			case ack = <-c.f.Ok():
			case err = <-c.f.Err():
			case <-w.ctx.Done():
				return w.ctx.Err()
			case <-stall.C:
				if !w.s.leaderMoved(w.ctx) {
					stall.Reset(ackStall)
					continue
				}
				// The acks of publishes to a leader that is gone would only time out:
				// give up on them at once.
				for _, p := range w.pending {
					p.f = nil
				}
				err = errLeaderMoved
			}
		}
		// A future's channels deliver once.
		c.f = nil
	}
	if err == nil && ack.Sequence <= w.last {
		err = errOutOfOrder
	}
	if err == nil {
		w.failedAt = time.Time{}
		w.confirm(ack.Sequence)
		return nil
	}
	if !transient(err) {
		return err
	}
	return w.recover(err)
}

// confirm records the oldest chunk in flight as stored at seq and frees its buffer.
func (w *chunkWriter) confirm(seq uint64) {
	c := w.pending[0]
	w.pending[0] = nil
	w.pending = w.pending[1:]
	w.stored++
	w.last = seq
	w.free = append(w.free, c.data[:cap(c.data)])
}

// recover waits until every publish in flight has resolved and the stream has a leader
// again, puts the stored chunks in order (reconcile) and publishes again those that are
// not. It gives up leaderWait after the first of a run of failures.
func (w *chunkWriter) recover(cause error) error {
	if w.failedAt.IsZero() {
		w.failedAt = time.Now()
	}
	giveUp := w.failedAt.Add(leaderWait)
	for try := 0; ; try++ {
		if try > 0 {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-w.ctx.Done():
				return w.ctx.Err()
			}
		}
		if time.Now().After(giveUp) {
			return fmt.Errorf("publishing chunks failed for %s: %w", time.Since(w.failedAt).Round(time.Second), cause)
		}
		w.recoveries++
		w.drain(w.ctx)
		err := w.s.waitLeader(w.ctx, giveUp)
		if err == nil {
			err = w.reconcile()
		}
		if err == nil {
			w.s.log.Warn("natsblob: chunk publishes failed; the upload goes on after a repair",
				"bucket", w.s.bucket, "cause", cause.Error(), "chunks_in_place", w.stored,
				"since_failure", time.Since(w.failedAt).Round(time.Millisecond))
			return w.republish()
		}
		if cerr := w.ctx.Err(); cerr != nil {
			return cerr
		}
		if !transient(err) {
			return err
		}
		cause = err
	}
}

// drain waits for the outcome of every publish in flight and drops it: reconcile reads
// what the stream holds instead.
func (w *chunkWriter) drain(ctx context.Context) {
	for _, c := range w.pending {
		if c.f == nil {
			continue
		}
		select {
		case <-c.f.Ok():
		case <-c.f.Err():
		case <-ctx.Done():
			return
		}
		c.f = nil
	}
}

// reconcile reads, from the stream's leader, the messages on subj past the last chunk in
// place. Each that is the next chunk in order is in place too; any other is deleted, and
// the chunk it holds gets a new message ID for its next publish.
func (w *chunkWriter) reconcile() error {
	ctx, cancel := context.WithTimeout(w.ctx, w.s.timeout)
	defer cancel()
	seq := w.last + 1
	for {
		m, err := w.s.nextStored(ctx, w.subj, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		seq = m.Sequence + 1
		id := m.Header.Get(jetstream.MsgIDHeader)
		if len(w.pending) > 0 && id == w.pending[0].msgID {
			w.confirm(m.Sequence)
			continue
		}
		if err := w.s.stream.DeleteMsg(ctx, m.Sequence); err != nil {
			return err
		}
		for _, c := range w.pending {
			if c.msgID == id {
				c.msgID = fmt.Sprintf("%s.%d.%d", w.id, c.k, w.recoveries)
			}
		}
	}
}

// republish publishes again, in order, every chunk not in place.
func (w *chunkWriter) republish() error {
	for _, c := range w.pending {
		if err := w.publish(c); err != nil {
			return err
		}
	}
	return nil
}

// verify checks, after a repaired upload, that subj holds exactly the n chunks confirmed
// (with their sequences rising, they are then in order): a publish that was still on its
// way during a repair could have landed since.
func (w *chunkWriter) verify(n uint32) error {
	giveUp := time.Now().Add(leaderWait)
	for {
		ctx, cancel := context.WithTimeout(w.ctx, w.s.timeout)
		si, err := w.s.stream.Info(ctx, jetstream.WithSubjectFilter(w.subj))
		cancel()
		if err == nil {
			if have := si.State.Subjects[w.subj]; have != uint64(n) {
				return fmt.Errorf("the stream holds %d chunks of this upload after a repair, want %d", have, n)
			}
			return nil
		}
		if w.ctx.Err() != nil || !transient(err) || time.Now().After(giveUp) {
			return err
		}
		if err := w.s.waitLeader(w.ctx, giveUp); err != nil {
			return err
		}
	}
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
