package natsblob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Reading uses its own pull consumer instead of ObjectStore.Get, because
// nats.go's Get reader (1.55) gives the whole transfer one deadline (the JetStream
// default timeout when ctx has none), so a slow download fails after a few seconds, and
// it waits until that deadline when the object's chunks are purged mid-read. Here ctx
// bounds the transfer and Config.Timeout bounds the wait for each chunk.

const (
	// chunkPrefetch is how many chunks the consumer buffers ahead of the reader: 2 MiB
	// of Put's chunks.
	chunkPrefetch = 8
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
	pull    *puller // the consumer's messages (pull.go)
	idle    time.Duration
	// prefetch is how many chunks the consumer buffers ahead of the reader: chunkPrefetch,
	// or fewer when the range read spans fewer.
	prefetch int
	info     *jetstream.ObjectInfo
	size     uint64 // the object's chunk size
	end      uint64 // where the range read ends; 0 once it may go on to the object's end
	seq      uint64 // the stream sequence of the last chunk received
	// delivered counts the messages of the current consumer; each has the next
	// consumer sequence, or one went missing.
	delivered uint64
	stale     []string // consumers given up and not yet deleted

	left uint64 // bytes of the object not yet received
	buf  []byte // received bytes not yet read
	// hash and want check the object's digest when the reader starts at its first
	// chunk; a reader that starts at a later chunk has both nil (see seekChunk).
	hash hash.Hash
	want []byte
	// whole is, for a reader that starts past the first chunk, the chunk size every
	// chunk but the last must have; 0 otherwise.
	whole uint64
	err   error
	done  bool
}

// openChunks opens a reader of info's chunks positioned at byte off, which is below the
// object's size, for n bytes (all the rest when n < 0). Its consumer buffers no more
// chunks than the range spans.
func (s *Store) openChunks(ctx context.Context, info *jetstream.ObjectInfo, off, n int64) (*chunkReader, error) {
	want, err := jetstream.DecodeObjectDigest(info.Digest)
	if err != nil {
		return nil, err
	}
	r := &chunkReader{
		ctx:     ctx,
		store:   s,
		subject: chunkSubject(s.bucket, info.NUID),
		idle:    s.timeout,
		info:    info,
		size:    objectChunkSize(info),
		end:     info.Size,
		want:    want,
	}
	if n >= 0 && uint64(off+n) < r.end {
		r.end = uint64(off + n)
	}
	if err := r.start(off); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// start positions the reader at byte off, below the object's size, with a new
// consumer. When off lies past the first chunk and the chunks are laid out as Put lays
// them out, the consumer starts at the chunk that holds off (seekChunk) instead of
// sending every byte before it; otherwise it starts at the first chunk.
func (r *chunkReader) start(off int64) error {
	r.stop()
	r.buf = nil
	r.seq, r.left = 0, r.info.Size
	r.hash, r.whole = sha256.New(), 0
	first := uint64(0) // the chunk the consumer starts at
	if uint64(off) >= r.size {
		k := uint64(off) / r.size
		seq, err := r.store.seekChunk(r.ctx, r.info, k)
		if err != nil && r.ctx.Err() != nil {
			return fmt.Errorf("find chunk %d: %w", k, err)
		}
		// A seek that failed otherwise (the stream may be electing a leader) leaves the
		// reader to start at the first chunk, which waits for a leader as any read does.
		if err == nil && seq > 0 {
			r.seq = seq - 1 // the consumer starts after r.seq
			r.left = r.info.Size - k*r.size
			r.hash, r.whole = nil, r.size
			off -= int64(k * r.size)
			first = k
		}
	}
	r.prefetch = chunkPrefetch
	if r.end > 0 {
		r.prefetch = int(max(1, min(chunkPrefetch, (r.end-1)/r.size+1-first)))
	}
	if err := r.reopen(time.Now().Add(leaderWait)); err != nil {
		r.dropStale()
		return fmt.Errorf("open chunks: %w", err)
	}
	return r.skip(off)
}

// seekSkip is how far past the bytes at hand a forward Seek reads on rather than
// starting a new consumer, which costs a few requests.
const seekSkip = 512 << 10

// Seek moves the reader to an offset in the object, as io.Seeker does. A move forward
// within the chunk at hand, or by less than seekSkip past it, reads on; any other starts a
// new consumer at the chunk holding the offset (see start), so a reader that jumps ahead,
// as http.ServeContent does for a Range, receives what it reads, not what it skips. A
// reader that no longer starts at the first chunk does not check the object's digest
// (see seekChunk).
func (r *chunkReader) Seek(offset int64, whence int) (int64, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.done {
		return 0, errors.New("natsblob: seek on a closed reader")
	}
	pos := int64(r.info.Size-r.left) - int64(len(r.buf))
	abs := offset
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		abs += pos
	case io.SeekEnd:
		abs += int64(r.info.Size)
	default:
		return 0, fmt.Errorf("natsblob: seek: invalid whence %d", whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("natsblob: seek to %d, before the start", abs)
	}
	// A Seek may end a range read (r.end) early; the reader then reads on to the
	// object's end, so it buffers as many chunks as a whole read.
	r.end = 0
	var err error
	switch {
	case abs == pos:
	case abs >= int64(r.info.Size):
		r.stop()
		r.buf, r.left, r.hash = nil, 0, nil
	case abs > pos && abs-pos <= int64(len(r.buf))+seekSkip:
		err = r.skip(abs - pos)
	default:
		if err = r.start(abs); err != nil {
			r.err = err
		}
	}
	if err != nil {
		return 0, fmt.Errorf("natsblob: seek to %d: %w", abs, err)
	}
	return abs, nil
}

// objectChunkSize is the chunk size info's writer recorded, or nats.go's default, which
// its writer uses when it records none.
func objectChunkSize(info *jetstream.ObjectInfo) uint64 {
	if info.Opts != nil && info.Opts.ChunkSize > 0 {
		return uint64(info.Opts.ChunkSize)
	}
	return natsChunkSize
}

// maxSeekProbes bounds the message reads seekChunk makes before it gives up and lets
// the reader start at the first chunk.
const maxSeekProbes = 64

// seekChunk returns the stream sequence of chunk k (from 0) of info, or 0 when the
// chunks are not laid out as Put lays them out, and the reader must start at the first.
//
// A reader may start at chunk k only when chunk k holds the bytes from k times the chunk
// size on. Put makes it so: it fills every chunk but the last to the chunk size, and
// gives chunk k the message ID "<NUID>.<k>" (or "<NUID>.<k>.<n>" when published again
// after a failure), so each chunk names its index. Other Object Store writers need not:
// nats.go's Put stores whatever each Read of its source returned, and sets no message
// ID, so its objects are read from the first chunk.
//
// The chunks of one version are stored in order but may be interleaved with other
// messages of the stream (concurrent uploads, meta messages), so chunk k lies at or
// after the first chunk's sequence plus k. seekChunk reads the first chunk at or after a
// sequence (probeChunk) and bisects on the index that message names. With one upload at a
// time the chunks are contiguous and the first probe finds chunk k.
//
// What a reader that starts past the first chunk cannot check is the object's digest,
// which covers every byte: it checks instead that each chunk has the length the layout
// says (see next), and relies on JetStream's file store, which checks every stored
// message's own checksum when it loads it. A read from the first chunk to the end is
// checked against the digest, as before.
func (s *Store) seekChunk(ctx context.Context, info *jetstream.ObjectInfo, k uint64) (uint64, error) {
	if k >= uint64(info.Chunks) {
		return 0, nil // not Put's layout
	}
	subj := chunkSubject(s.bucket, info.NUID)
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	first, err := s.probeChunk(rctx, subj, 1)
	if err != nil {
		return 0, err
	}
	if i, ok := chunkIndex(first, info.NUID); !ok || i != 0 {
		return 0, nil
	}
	// Chunk k lies in [lo, hi].
	lo, hi := first.Sequence+k, uint64(math.MaxUint64)
	guess := lo
	for range maxSeekProbes {
		m, err := s.probeChunk(rctx, subj, guess)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, nil // chunks gone: the reader reports it
		}
		if err != nil {
			return 0, err
		}
		i, ok := chunkIndex(m, info.NUID)
		switch {
		case !ok:
			return 0, nil
		case i == k:
			return m.Sequence, nil
		case i < k:
			lo = m.Sequence + (k - i) // chunks i+1..k lie after chunk i
		default:
			hi = guess - 1
		}
		if hi == math.MaxUint64 {
			last, err := s.lastStored(rctx, subj)
			if err != nil {
				return 0, err
			}
			hi = last.Sequence
		}
		if lo > hi {
			return 0, nil
		}
		guess = lo + (hi-lo)/2
	}
	return 0, nil
}

// probeChunk returns the first message on subj at or after seq. Any replica may answer
// (a direct get, which sends the message as it is stored, where the leader's API
// encodes it in JSON): chunks have the same sequences on every replica, and seekChunk
// checks the index each names, so only a replica that lags and has none of them is
// wrong, and then the leader is asked.
func (s *Store) probeChunk(ctx context.Context, subj string, seq uint64) (*jetstream.RawStreamMsg, error) {
	m, err := s.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return s.nextStored(ctx, subj, seq)
	}
	return m, err
}

// chunkIndex reads the index of a chunk of version nuid from its message ID, as Put
// sets it: "<nuid>.<k>", or "<nuid>.<k>.<n>".
func chunkIndex(m *jetstream.RawStreamMsg, nuid string) (uint64, bool) {
	rest, ok := strings.CutPrefix(m.Header.Get(jetstream.MsgIDHeader), nuid+".")
	if !ok {
		return 0, false
	}
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		rest = rest[:i]
	}
	k, err := strconv.ParseUint(rest, 10, 32)
	return k, err == nil
}

// open starts a consumer of the chunks after the last one received: an ephemeral pull
// consumer configured as nats.go configures an ordered one. nats.go's ordered consumer is
// not used because it recreates itself inside Next, with its own timeout of 10 s and
// regardless of the caller's context; the reader does that itself (renew), checking the
// order by the consumer's sequence. Its messages are pulled by a puller (pull.go), not
// nats.go's iterator, which waits for good on a pull request answered 503.
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
	pull, err := newPuller(r.store.nc, r.store.stream.CachedInfo().Config.Name, cfg.Name, r.prefetch)
	if err != nil {
		r.stale = append(r.stale, cfg.Name)
		return err
	}
	r.cons, r.pull, r.delivered = cons, pull, 0
	return nil
}

// renew replaces the consumer, which stopped delivering (its server may be gone, or the
// stream's leader changed), by a new one that starts after the last chunk received.
func (r *chunkReader) renew(giveUp time.Time, cause error) error {
	r.store.renewals.Add(1)
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
	data := msg.Data
	if uint64(len(data)) > r.left {
		return fmt.Errorf("object holds more bytes than its recorded size")
	}
	if r.whole > 0 && uint64(len(data)) != min(r.whole, r.left) {
		return fmt.Errorf("a chunk holds %d bytes, want %d: the object's chunks are not where its layout says", len(data), min(r.whole, r.left))
	}
	r.left -= uint64(len(data))
	if r.hash != nil {
		r.hash.Write(data)
		if r.left == 0 && !bytes.Equal(r.hash.Sum(nil), r.want) {
			return jetstream.ErrDigestMismatch
		}
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
func (r *chunkReader) receive() (*nats.Msg, error) {
	start := time.Now()
	deadline := start.Add(r.idle)
	renewAt := start.Add(min(renewAfter, r.idle/2))
	for {
		wait := max(min(stallCheck, time.Until(deadline)), time.Millisecond)
		ctx, cancel := context.WithTimeout(r.ctx, wait)
		m, err := r.pull.next(ctx)
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
	if r.pull == nil {
		return
	}
	r.pull.stop()
	r.stale = append(r.stale, r.cons.CachedInfo().Name)
	r.cons, r.pull = nil, nil
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
