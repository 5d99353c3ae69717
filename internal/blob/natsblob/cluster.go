package natsblob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
		// 10158: a message ID seen in a proposal not yet stored, as after a lost ack.
		return apiErr.Code == http.StatusServiceUnavailable || apiErr.ErrorCode == 10158
	}
	for _, e := range []error{
		jetstream.ErrAsyncPublishTimeout, jetstream.ErrNoStreamResponse, jetstream.ErrJetStreamNotEnabled,
		nats.ErrTimeout, nats.ErrNoResponders, nats.ErrDisconnected, nats.ErrReconnectBufExceeded,
		context.DeadlineExceeded, errOutOfOrder,
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
// has it, or jetstream.ErrMsgNotFound. Stream.GetMsg is not used because on a bucket
// (which allows direct gets) any replica may answer it, and one that lags behind the
// leader would miss chunks stored just before a failure. New makes s.js with the default
// API prefix.
func (s *Store) nextStored(ctx context.Context, subj string, seq uint64) (*jetstream.RawStreamMsg, error) {
	req, err := json.Marshal(struct {
		Seq        uint64 `json:"seq"`
		NextBySubj string `json:"next_by_subj"`
	}{seq, subj})
	if err != nil {
		return nil, err
	}
	reply, err := s.nc.RequestWithContext(ctx, jetstream.DefaultAPIPrefix+"STREAM.MSG.GET."+streamName(s.bucket), req)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Message *struct {
			Subject  string `json:"subject"`
			Sequence uint64 `json:"seq"`
			Header   []byte `json:"hdrs"`
			Data     []byte `json:"data"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("stream message %d on %s: %w", seq, subj, err)
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
	m := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Sequence, Data: resp.Message.Data}
	if len(resp.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("stream message %d on %s: %w", m.Sequence, subj, err)
		}
	}
	return m, nil
}
