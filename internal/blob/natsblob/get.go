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
)

// Reading uses its own pull-based ordered consumer instead of ObjectStore.Get, because
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
)

// chunkReader streams an object's chunks in order and checks the digest when the last
// one arrives, before handing out its bytes.
type chunkReader struct {
	ctx     context.Context
	stream  jetstream.Stream
	subject string // the chunk subject being read
	cons    jetstream.Consumer
	iter    jetstream.MessagesContext
	idle    time.Duration

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
	subject := chunkSubject(s.bucket, info.NUID)
	cons, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("open chunks: %w", err)
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(chunkPrefetch))
	if err != nil {
		return nil, fmt.Errorf("open chunks: %w", err)
	}
	return &chunkReader{
		ctx:     ctx,
		stream:  s.stream,
		subject: subject,
		cons:    cons,
		iter:    iter,
		idle:    s.timeout,
		left:    info.Size,
		hash:    sha256.New(),
		want:    want,
	}, nil
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

// next receives one chunk into r.buf. While it waits it checks every stallCheck whether
// the chunks still exist, so a reader of an object replaced or deleted meanwhile fails
// at once instead of after the whole idle timeout.
func (r *chunkReader) next() error {
	deadline := time.Now().Add(r.idle)
	var msg jetstream.Msg
	for {
		wait := min(stallCheck, time.Until(deadline))
		ctx, cancel := context.WithTimeout(r.ctx, wait)
		m, err := r.iter.Next(jetstream.NextContext(ctx))
		cancel()
		if err == nil {
			msg = m
			break
		}
		if cerr := r.ctx.Err(); cerr != nil {
			return cerr
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("no chunk arrived within %s with %d bytes still to come", r.idle, r.left)
		}
		if r.purged() {
			return fmt.Errorf("object was overwritten or deleted while being read, %d bytes before its end", r.left)
		}
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

// purged reports whether the chunks being read are gone from the stream.
func (r *chunkReader) purged() bool {
	ctx, cancel := context.WithTimeout(r.ctx, r.idle)
	defer cancel()
	_, err := r.stream.GetLastMsgForSubject(ctx, r.subject)
	return errors.Is(err, jetstream.ErrMsgNotFound)
}

// Close stops the consumer and deletes it from the server (best effort; the server also
// removes an inactive ordered consumer by itself).
func (r *chunkReader) Close() error {
	if r.done {
		return nil
	}
	r.done = true
	r.iter.Stop()
	if info := r.cons.CachedInfo(); info != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.idle)
		defer cancel()
		_ = r.stream.DeleteConsumer(ctx, info.Name)
	}
	return nil
}
