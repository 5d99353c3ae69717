package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
)

// Overview is the state of a cluster's queue and workers, for `skrip doctor`.
type Overview struct {
	Queue       string // the stream: replicas, leader, depth; or why it cannot be read
	Redelivered int    // runs handed to a second worker and not yet done
	Buckets     []string
	Workers     []protocol.Heartbeat
}

// Describe reads the queue of the installation named n, the buckets named, and the
// workers' heartbeats. Each part it cannot read says why, rather than failing the whole.
func Describe(ctx context.Context, js jetstream.JetStream, n protocol.Names, buckets ...string) Overview {
	var o Overview
	if s, err := js.Stream(ctx, n.Stream()); err != nil {
		o.Queue = "not readable (an API node in cluster mode makes it; a worker's NATS user may not read it): " + err.Error()
	} else if info, err := s.Info(ctx); err != nil {
		o.Queue = "not readable: " + err.Error()
	} else {
		leader := "this server"
		if info.Cluster != nil && info.Cluster.Leader != "" {
			leader = info.Cluster.Leader
		}
		o.Queue = fmt.Sprintf("%d replica(s), leader %s, %d run(s) waiting or running (at most %d)",
			info.Config.Replicas, leader, info.State.Msgs, info.Config.MaxMsgs)
		if c, err := s.Consumer(ctx, protocol.Consumer); err == nil {
			if ci, err := c.Info(ctx); err == nil {
				o.Redelivered = ci.NumRedelivered
			}
		}
	}
	for _, b := range buckets {
		obs, err := js.ObjectStore(ctx, b)
		if err != nil {
			o.Buckets = append(o.Buckets, fmt.Sprintf("%s: not readable: %v", b, err))
			continue
		}
		st, err := obs.Status(ctx)
		if err != nil {
			o.Buckets = append(o.Buckets, fmt.Sprintf("%s: not readable: %v", b, err))
			continue
		}
		o.Buckets = append(o.Buckets, fmt.Sprintf("%s: %d replica(s), %d bytes", b, st.Replicas(), st.Size()))
	}
	kv, err := js.KeyValue(ctx, n.Registry())
	if err != nil {
		return o
	}
	keys, err := kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return o
	}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue
		}
		var hb protocol.Heartbeat
		if json.Unmarshal(e.Value(), &hb) == nil {
			o.Workers = append(o.Workers, hb)
		}
	}
	sort.Slice(o.Workers, func(i, j int) bool { return o.Workers[i].Worker < o.Workers[j].Worker })
	return o
}
