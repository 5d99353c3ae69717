package natsblob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A replicated bucket loses its stream leader when a node stops or the cluster moves the
// leadership. Until another replica is elected (a few seconds at most), publishes and
// requests go unanswered; those in flight at the change may or may not have been stored.
// Put and Get ride this out (write.go, get.go): they wait for a leader for up to
// leaderWait, then find out what the stream holds and go on from there.

// leaderWait bounds how long a Put or a Get waits for its stream to answer again after a
// failure that a leader change explains.
const leaderWait = 30 * time.Second

// transient reports whether err is what a request or publish meets while the stream has
// no leader or the connection moves to another server, rather than a refusal that
// repeating would not change (a full bucket, a lost compare-and-swap, a closed
// connection).
func transient(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case 10008, // JetStream system temporarily unavailable
			10158, // a message ID seen in a proposal not yet stored, as after a lost ack
			10163: // expected last sequence per subject temporarily unavailable
			return true
		}
		// Other errors, a full bucket among them (503 insufficient resources), stand.
		return false
	}
	// The connection's socket failing as its server goes; nats.go reconnects.
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	for _, e := range []error{
		jetstream.ErrAsyncPublishTimeout, jetstream.ErrNoStreamResponse, jetstream.ErrJetStreamNotEnabled,
		nats.ErrTimeout, nats.ErrNoResponders, nats.ErrDisconnected, nats.ErrReconnectBufExceeded,
		context.DeadlineExceeded, errOutOfOrder, errLeaderMoved,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// waitLeader waits until the stream answers from an elected leader, backing off between
// tries, until giveUp or the end of ctx.
func (s *Store) waitLeader(ctx context.Context, giveUp time.Time) error {
	backoff := 50 * time.Millisecond
	for {
		rctx, cancel := context.WithTimeout(ctx, min(s.timeout, 2*time.Second))
		si, err := s.stream.Info(rctx)
		cancel()
		if err == nil && (si.Cluster == nil || si.Cluster.Leader != "") {
			s.noteLeader(si)
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil && !transient(err) {
			return err
		}
		if err == nil {
			err = errors.New("the stream has no leader")
		}
		if time.Now().Add(backoff).After(giveUp) {
			return fmt.Errorf("the bucket's stream did not recover within %s: %w", leaderWait, err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, time.Second)
	}
}

// nextStored returns the first message on subj at or after seq, as the stream's leader
// has it, or jetstream.ErrMsgNotFound.
func (s *Store) nextStored(ctx context.Context, subj string, seq uint64) (*jetstream.RawStreamMsg, error) {
	return s.leaderGet(ctx, msgGetRequest{Seq: seq, NextBySubj: subj})
}

// lastStored returns the last message on subj as the stream's leader has it, or
// jetstream.ErrMsgNotFound.
func (s *Store) lastStored(ctx context.Context, subj string) (*jetstream.RawStreamMsg, error) {
	return s.leaderGet(ctx, msgGetRequest{LastBySubj: subj})
}

type msgGetRequest struct {
	Seq        uint64 `json:"seq,omitempty"`
	NextBySubj string `json:"next_by_subj,omitempty"`
	LastBySubj string `json:"last_by_subj,omitempty"`
}

// leaderGet reads a message from the stream's leader. Stream.GetMsg and
// GetLastMsgForSubject are not used because on a bucket, which allows direct gets, any
// replica may answer them, and one that lags behind the leader misses what was stored
// just before: a chunk before a failure, or the meta of an object just written. New makes
// s.js with the default API prefix.
func (s *Store) leaderGet(ctx context.Context, req msgGetRequest) (*jetstream.RawStreamMsg, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	reply, err := s.nc.RequestWithContext(ctx, jetstream.DefaultAPIPrefix+"STREAM.MSG.GET."+streamName(s.bucket), data)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Message *struct {
			Subject  string    `json:"subject"`
			Sequence uint64    `json:"seq"`
			Header   []byte    `json:"hdrs"`
			Data     []byte    `json:"data"`
			Time     time.Time `json:"time"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("stream message get: %w", err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, resp.Error
	}
	if resp.Message == nil {
		return nil, jetstream.ErrInvalidJetStreamResponse
	}
	m := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Sequence,
		Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("stream message %d: %w", m.Sequence, err)
		}
	}
	return m, nil
}

// leaderMoved reports whether the stream's leader is another than the store last saw, or
// the stream does not answer. A single server has no leader to move.
func (s *Store) leaderMoved(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, min(s.timeout, 2*time.Second))
	si, err := s.stream.Info(rctx)
	cancel()
	if err != nil {
		return transient(err)
	}
	return s.noteLeader(si)
}

// noteLeader records the stream's leader as si gives it and reports whether it changed.
func (s *Store) noteLeader(si *jetstream.StreamInfo) bool {
	if si.Cluster == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	moved := si.Cluster.Leader != s.leader
	s.leader = si.Cluster.Leader
	return moved || s.leader == ""
}
