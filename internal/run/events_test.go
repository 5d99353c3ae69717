package run

import (
	"fmt"
	"testing"

	"github.com/skrip-dev/skrip/internal/store"
)

// TestHubBoundsEmptyLines publishes a million empty lines, which the hub once did not
// count: the backlog, a stalled subscriber's queue and the hub's total stay within their
// caps by bytes (framing included) and by count, the statuses still arrive, and the
// subscriber is told how many lines it missed.
func TestHubBoundsEmptyLines(t *testing.T) {
	h := newHub()
	const run = "r_1"
	h.publish(run, Event{Type: "status", Data: store.StatusRunning})
	_, stalled := h.subscribe(run, true)
	_, statuses := h.subscribe(run, false)
	const lines = 1_000_000
	for range lines {
		h.publish(run, Event{Type: "stdout"})
	}
	h.mu.Lock()
	b := h.backlog[run]
	if len(b.events) > maxBacklogEvents || b.bytes > maxBacklogBytes || !b.full {
		t.Errorf("backlog: %d events, %d bytes, full %v", len(b.events), b.bytes, b.full)
	}
	if len(stalled.queue) > maxQueueEvents || stalled.bytes > maxQueueBytes || h.queued > maxQueuedBytes {
		t.Errorf("a stalled subscriber holds %d events, %d bytes (the hub %d)", len(stalled.queue), stalled.bytes, h.queued)
	}
	h.mu.Unlock()

	past, late := h.subscribe(run, true)
	if len(past) == 0 || past[len(past)-1].Type != "notice" {
		t.Errorf("a late subscriber's backlog does not end with a notice")
	}
	late.Close()

	h.publish(run, Event{Type: "status", Data: store.StatusSucceeded})
	got := stalled.Take()
	var shown, missed int
	for _, e := range got {
		switch e.Type {
		case "stdout":
			shown++
		case "notice":
			var n int
			if _, err := fmt.Sscanf(e.Data, "%d lines", &n); err != nil {
				t.Fatalf("notice %q", e.Data)
			}
			missed += n
		}
	}
	if last := got[len(got)-2]; last.Type != "status" || last.Data != store.StatusSucceeded {
		t.Errorf("the final status is not among the last events: %+v", got[len(got)-3:])
	}
	if shown+missed != lines {
		t.Errorf("%d lines delivered and %d noticed as missed; %d were published", shown, missed, lines)
	}
	if s := statuses.Take(); len(s) != 1 || s[0].Data != store.StatusSucceeded {
		t.Errorf("a status-only subscriber got %+v", s)
	}
	stalled.Close()
	statuses.Close()
	if h.queued != 0 || len(h.subs) != 0 || h.backlog[run] != nil {
		t.Errorf("after the run: %d bytes queued, %d runs subscribed, backlog %v", h.queued, len(h.subs), h.backlog[run])
	}
}
