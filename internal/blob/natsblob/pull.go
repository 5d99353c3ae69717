package natsblob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A reader pulls its consumer's chunks itself rather than through nats.go's
// Consumer.Messages, because of what happens right after the consumer is made in a
// cluster. The server that makes it answers the request through the system account,
// whose route is not the one that tells the other servers about the consumer's
// next-message subject; the answer can arrive first. A pull request sent at once to
// another server then finds no one listening there, and that server answers it with a
// 503 "no responders". nats.go's iterator (1.55) takes that answer as a notice and keeps
// waiting for the messages it asked for, which never come: every such download stalled
// until the reader renewed its consumer, 2 s later ("no chunk for 2.0 s", in a healthy
// cluster). Here a 503 is asked again a moment later, and the messages come as soon as
// the subject is known.

// puller keeps up to batch messages of a consumer asked for, each pull request on a
// reply subject of its own, so that an answer about a request (503, expired) says how
// many of the messages asked for will not come. Messages carry their stream subject,
// not the request's: they count against the oldest request, which the consumer serves
// first.
type puller struct {
	nc      *nats.Conn
	subject string // the consumer's next-message subject
	inbox   string // the pull requests' replies go to inbox.<n>
	sub     *nats.Subscription
	msgs    chan *nats.Msg
	batch   int
	asked   []request // the pull requests in flight, oldest first
	n       int       // the last pull request's number
	retryAt time.Time // when a pull refused for want of responders is asked again
	backoff time.Duration
	// refused counts the pull requests answered 503 (tests).
	refused int
}

// request is a pull request in flight: its reply subject, and how many messages it
// still has to bring.
type request struct {
	reply string
	left  int
}

// pullExpires is how long a pull request waits on the server for messages to bring.
const pullExpires = 30 * time.Second

// noRespondersRetry is how long a pull answered 503 waits before it asks again, at
// first; it doubles up to a tenth of a second.
const noRespondersRetry = 5 * time.Millisecond

// newPuller subscribes to the replies of pull requests for consumer of stream; it asks
// for messages when next is first called.
func newPuller(nc *nats.Conn, stream, consumer string, batch int) (*puller, error) {
	p := &puller{nc: nc, subject: jetstream.DefaultAPIPrefix + "CONSUMER.MSG.NEXT." + stream + "." + consumer,
		inbox: nc.NewInbox(), batch: batch, backoff: noRespondersRetry,
		// Room for every message asked for, and the status answers besides: a full
		// channel drops a message, which the reader sees as a gap.
		msgs: make(chan *nats.Msg, batch+16)}
	sub, err := nc.ChanSubscribe(p.inbox+".*", p.msgs)
	if err != nil {
		return nil, err
	}
	p.sub = sub
	return p, nil
}

// stop ends the subscription; messages still on their way are dropped.
func (p *puller) stop() { p.sub.Unsubscribe() }

// pending is how many messages the pull requests in flight still bring.
func (p *puller) pending() int {
	n := 0
	for _, r := range p.asked {
		n += r.left
	}
	return n
}

// fill asks for more messages when fewer than half of batch are on their way, as
// nats.go does, unless a refused pull waits to be asked again.
func (p *puller) fill() error {
	pending := p.pending()
	if pending*2 > p.batch || time.Now().Before(p.retryAt) {
		return nil
	}
	want := p.batch - pending
	if want <= 0 {
		return nil
	}
	p.n++
	reply := p.inbox + "." + strconv.Itoa(p.n)
	req, _ := json.Marshal(struct {
		Batch   int           `json:"batch"`
		Expires time.Duration `json:"expires"`
	}{want, pullExpires})
	if err := p.nc.PublishRequest(p.subject, reply, req); err != nil {
		return err
	}
	p.asked = append(p.asked, request{reply, want})
	return nil
}

// next returns the consumer's next message, waiting until ctx ends.
func (p *puller) next(ctx context.Context) (*nats.Msg, error) {
	for {
		if err := p.fill(); err != nil {
			return nil, err
		}
		m, err := p.wait(ctx)
		if err != nil || m == nil {
			if err != nil {
				return nil, err
			}
			continue // time to ask again
		}
		if len(m.Data) == 0 && m.Header.Get("Status") != "" {
			if err := p.status(m); err != nil {
				return nil, err
			}
			continue
		}
		if len(p.asked) > 0 {
			if p.asked[0].left--; p.asked[0].left <= 0 {
				p.asked = p.asked[1:]
			}
		}
		p.backoff = noRespondersRetry
		return m, nil
	}
}

// wait returns the next message that arrives, or nil when a refused pull is due to be
// asked again first.
func (p *puller) wait(ctx context.Context) (*nats.Msg, error) {
	var retry <-chan time.Time
	if d := time.Until(p.retryAt); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		retry = t.C
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-retry:
		return nil, nil
	case m, ok := <-p.msgs:
		if !ok {
			return nil, nats.ErrBadSubscription
		}
		return m, nil
	}
}

// status handles a status answer of the server to a pull request: nil when the reader
// may wait on.
func (p *puller) status(m *nats.Msg) error {
	switch code := m.Header.Get("Status"); code {
	case "100": // a heartbeat or flow control: not asked for, nothing to do
		return nil
	case "503":
		// No one listens on the consumer's subject on this server yet: it was made a
		// moment ago (see above). Asked again shortly.
		p.forget(m.Subject)
		p.refused++
		p.retryAt = time.Now().Add(p.backoff)
		p.backoff = min(2*p.backoff, 100*time.Millisecond)
		return nil
	case "408", "404":
		// The request expired (or found nothing to wait for): what it did not bring, it
		// will not.
		p.forget(m.Subject)
		return nil
	default:
		// A leadership change, a deleted consumer, too many requests waiting: the reader
		// replaces the consumer.
		p.forget(m.Subject)
		return fmt.Errorf("%w: %s %s", errPullRefused, code, m.Header.Get("Description"))
	}
}

// forget drops the request answered on reply: the messages it still had to bring will
// not come.
func (p *puller) forget(reply string) {
	for i, r := range p.asked {
		if r.reply == reply {
			p.asked = append(p.asked[:i], p.asked[i+1:]...)
			return
		}
	}
}

// errPullRefused is a status answer to a pull request that ends the consumer's use.
var errPullRefused = errors.New("the consumer refused a pull request")
