package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/store"
)

// JetStream gives a run to another worker when its holder's progress signals stop for
// the ack wait, and also when they were only lost: while a stream's leader is elected
// they go nowhere, and the new leader redelivers at once (issue 31: 6.4 s without
// them, and a live run tried again). So before a redelivery becomes a second attempt,
// and before a run is failed as lost, the API node asks whether the run's holder is
// alive and still runs it (holding); while it is, the new delivery waits (protocol.Held)
// and the holder's result is the run's.

// holderPatience is how long holding asks a holder that has no subscription (its
// connection moving to another NATS server as one stops) before the registry decides.
const holderPatience = 3 * time.Second

// holding reports whether run r's current attempt still runs on a live worker: the
// worker says it holds that attempt, or, when it does not answer, its heartbeat in the
// registry lists the run. A registry that does not answer is an error, never a death.
func (h *Handlers) holding(ctx context.Context, r store.Run) (bool, error) {
	if r.Status != store.StatusRunning || r.Worker == "" {
		return false, nil
	}
	for deadline := time.Now().Add(holderPatience); ; {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		msg, err := h.nc.RequestWithContext(rctx, h.names.BacklogSubject(r.Worker), []byte(r.ID))
		cancel()
		if err == nil {
			var b protocol.Backlog
			if json.Unmarshal(msg.Data, &b) == nil {
				return b.Attempt == r.Attempts, nil
			}
			break
		}
		if !errors.Is(err, nats.ErrNoResponders) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		if !sleepCtx(ctx, 250*time.Millisecond) {
			return false, ctx.Err()
		}
	}
	kv, err := h.js.KeyValue(ctx, h.names.Registry())
	if err != nil {
		return false, err
	}
	e, err := kv.Get(ctx, r.Worker)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return false, nil
	case err != nil:
		return false, err
	}
	var hb protocol.Heartbeat
	if json.Unmarshal(e.Value(), &hb) != nil {
		return false, nil
	}
	return slices.Contains(hb.Runs, r.ID), nil
}

// heldElsewhere reports whether attempt of run id must wait: an earlier attempt holds
// the run and its worker is alive.
func (h *Handlers) heldElsewhere(ctx context.Context, id string, attempt int64) (bool, error) {
	if attempt < 2 {
		return false, nil
	}
	r, err := h.st.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if r.Attempts >= attempt || r.CancelRequested {
		return false, nil
	}
	return h.holding(ctx, r)
}
