package protocol

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// Every subscription of an API node or a worker on the subjects above goes through
// Subscribe (TestEverySubscriptionGuarded), so that no handler sees a message a worker
// made JetStream send in another's name.
//
// A worker's NATS user may publish only on its own subjects, but it may also make the
// server publish for it: a push consumer it creates on a stream it may write (its own
// bucket, its heartbeat) delivers that stream's bytes to any deliver subject it names,
// a pull request or a direct get it sends answers on any reply subject it names, and
// nats-server checks neither against its permissions (TestWorkerCannotDeliverAsAnother).
// What it so sends always looks like JetStream's: a consumer's message or flow control
// has a "$JS." reply, its heartbeats and a direct get's answer carry headers, and an API
// answer (a PubAck, a stream's info) has no reply and holds no bytes of the worker's.
// What API nodes and workers send each other has no header, and a request's reply is
// an inbox ("_INBOX.", or a worker's WorkerInbox).

// inbox is how every reply subject of the cluster's requests starts.
const inbox = "_INBOX."

// Forged says whether m cannot be what an API node or a worker sent on its subject: it
// carries headers, or a reply that is not an inbox, or, for a request, no reply at all.
func Forged(m *nats.Msg, request bool) bool {
	if len(m.Header) > 0 {
		return true
	}
	if m.Reply == "" {
		return request
	}
	return !strings.HasPrefix(m.Reply, inbox)
}

// Subscribe subscribes fn to subject, in queue group queue unless it is empty, and
// drops every message that is Forged: request says fn answers each message (its
// sender waits for a reply), so one without a reply is dropped too.
func Subscribe(nc *nats.Conn, subject, queue string, request bool, fn nats.MsgHandler) (*nats.Subscription, error) {
	guarded := func(m *nats.Msg) {
		if Forged(m, request) {
			return
		}
		fn(m)
	}
	if queue != "" {
		return nc.QueueSubscribe(subject, queue, guarded)
	}
	return nc.Subscribe(subject, guarded)
}
