package docker

// Warm starts (docs/runner-contract.md "Warm starts on Docker"). A warm container is a
// run's container made before its run, like the pool's, whose supervisor has also
// started Python (shim/skrip_warm.py) with some modules imported, waiting on a FIFO. On
// the start line the supervisor sources the run's environment from the file copied in
// with the inputs, exactly as a cold start does, and hands it to the waiting interpreter
// with `env -0`; the interpreter then runs the shim as a cold start would. It serves that
// one run; the container is removed after it.
//
// Which modules: those the script of the run just finished imports (runner.Imports), as
// on bwrap. A run takes only a container whose modules its own script imports, so it
// never holds memory a cold start would not. At most warmMax are parked (the least
// recently wanted set makes way), their memory within WarmMemory, and none while this
// machine's available memory is below twice that. A container's memory is the engine's
// stats of it once ready; until then (or when the stats fail) it is taken to hold what
// the last one measured of its set held, or warmGuess.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner"
)

// At most warmMax warm containers are parked, at most warmPerSet for one module set (two
// runs of a tool at once both start warm).
const (
	warmMax    = 4
	warmPerSet = 2
)

// warmGuess is what a warm container is taken to hold until one of its set is measured.
const warmGuess = 64 << 20

// warmSupervisor is a warm container's first process; $1 is the ready marker, $2 the
// run's file size cap in ulimit blocks (the limits are the container's), the rest the
// modules to preload. Python starts under the cap with stdin from one FIFO and the ready
// descriptor on another; both are opened as Python starts (a FIFO's open waits for its
// other end), and unlinked before the run can look, so the tool finds /tmp as a cold
// start does. From the start line on it is the cold supervisor, with the wall time
// applied by a timer instead of timeout(1) (whose exit code it keeps: 137 when killed).
const warmSupervisor = `ready=$1 fsize=$2
shift 2
mkdir -p /tmp/home
ulimit -f "$fsize"
mkfifo -m 600 /tmp/.skrip-go /tmp/.skrip-ready || exit 1
python3 -s -B /work/.skrip/skrip_warm.py --ready-fd 4 --env-nul "$@" </tmp/.skrip-go 4>/tmp/.skrip-ready &
pid=$!
exec 5>/tmp/.skrip-go
read -r ok </tmp/.skrip-ready
rm -f /tmp/.skrip-go /tmp/.skrip-ready
[ "$ok" = 1 ] || exit 0
printf '%s\n' "$ready"
read -r token wall fsize || exit 0
set -a
. /work/.skrip/env
set +a
mkdir -p "$HOME" "$XDG_CACHE_HOME"
env -0 >&5
exec 5>&-
(sleep "$wall"; kill -KILL "$pid") >/dev/null 2>&1 &
wait "$pid"
code=$?
# Nothing the tool started may outlive it: collection must not race a process of the run.
kill -KILL -1 2>/dev/null
oom=$(cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null | awk '$1 == "oom_kill" { print $2; exit }')
printf '\n%s %s %s\n' "$token" "$code" "${oom:-0}" >&2
exec sleep 2147483647`

// warmBox is one parked warm container.
type warmBox struct {
	c       *box
	modules []string
	key     string // the modules, joined
	limits  runner.Limits
	ready   chan struct{} // closed once its modules are imported
	dead    chan struct{} // closed when it ended before that
	memory  int64         // what the container held when it became ready
	early   []byte        // what Python wrote before it was ready, as attach frames
	stream  io.Reader     // the attach stream, from after the ready marker on
}

// warmPool holds the parked warm containers of one runner.
type warmPool struct {
	budget int64 // 0: no warm starts
	mu     sync.Mutex
	parked []*warmBox
	coming map[string]int // being made, by key
	wanted map[string]time.Time
	sizes  map[string]int64 // what a container of each set held, last measured
	closed bool
	warm   int64
	cold   int64
}

func newWarmPool(budget int64) *warmPool {
	return &warmPool{budget: budget, coming: map[string]int{}, wanted: map[string]time.Time{}, sizes: map[string]int64{}}
}

// sameLimits reports whether a container made for have may serve a run under want: the
// wall time comes with the start line and the log cap is the server's to apply;
// everything else is the container's.
func sameLimits(want, have runner.Limits) bool {
	want.WallTime, have.WallTime = 0, 0
	want.LogBytes, have.LogBytes = 0, 0
	return want == have
}

// take returns a parked container that may serve a run importing modules under l, the
// ready one with the most modules, or nil.
func (w *warmPool) take(modules []string, l runner.Limits) *warmBox {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.budget <= 0 {
		return nil
	}
	best, bestScore := -1, -1
	for i, s := range w.parked {
		score := 2 * len(s.modules)
		select {
		case <-s.dead:
			continue
		case <-s.ready:
			score += 1000
		default:
		}
		if sameLimits(l, s.limits) && runner.Covers(modules, s.modules) && score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		w.cold++
		return nil
	}
	s := w.parked[best]
	w.parked = slices.Delete(w.parked, best, best+1)
	w.warm++
	return s
}

// refill parks a container for runs importing modules under l, in the background, when
// fewer than warmPerSet are parked for them: into a free place, or the place of the set wanted longest
// ago. It parks none past the memory budget or under memory pressure.
func (w *warmPool) refill(r *Runner, modules []string, l runner.Limits) {
	key := strings.Join(modules, ",")
	w.mu.Lock()
	if w.budget <= 0 || w.closed {
		w.mu.Unlock()
		return
	}
	w.wanted[key] = time.Now()
	runner.ForgetOld(w.wanted, w.sizes, func(k string) bool {
		return w.coming[k] > 0 || slices.ContainsFunc(w.parked, func(s *warmBox) bool { return s.key == k })
	})
	have, held := w.coming[key], w.held()
	total := len(w.parked)
	for _, n := range w.coming {
		total += n
	}
	for _, s := range w.parked {
		if s.key == key && sameLimits(l, s.limits) {
			have++
		}
	}
	if have >= warmPerSet || (total >= warmMax && have > 0) {
		w.mu.Unlock()
		return
	}
	var evict *warmBox
	if total >= warmMax {
		oldest := -1
		for i, s := range w.parked {
			if s.key != key && (oldest < 0 || w.wanted[s.key].Before(w.wanted[w.parked[oldest].key])) {
				oldest = i
			}
		}
		if oldest < 0 {
			w.mu.Unlock()
			return
		}
		evict = w.parked[oldest]
		held -= w.size(evict)
		w.parked = slices.Delete(w.parked, oldest, oldest+1)
	}
	if held+cmp.Or(w.sizes[key], warmGuess) > w.budget || underPressure(w.budget) {
		w.mu.Unlock()
		if evict != nil {
			evict.discard(r)
		}
		return
	}
	w.coming[key]++
	r.pending.Add(1)
	w.mu.Unlock()
	if evict != nil {
		evict.discard(r)
	}
	go func() {
		defer r.pending.Done()
		s, err := r.parkWarm(modules, l)
		w.mu.Lock()
		w.coming[key]--
		if w.coming[key] == 0 {
			delete(w.coming, key)
		}
		closed := w.closed
		if err == nil && !closed {
			w.parked = append(w.parked, s)
		}
		w.mu.Unlock()
		switch {
		case err != nil:
			r.log.Warn("parking a warm container for the next run", "modules", key, "error", err)
		case closed:
			s.discard(r)
		default:
			r.pending.Add(1)
			go func() {
				defer r.pending.Done()
				s.measure(r, w)
			}()
		}
	}()
}

// size is what s is taken to hold: as measured, else as last measured for its set, else
// warmGuess. w.mu is held.
func (w *warmPool) size(s *warmBox) int64 {
	return cmp.Or(s.memory, w.sizes[s.key], warmGuess)
}

// held is what the parked containers and those being made are taken to hold. w.mu is
// held.
func (w *warmPool) held() int64 {
	var n int64
	for k, c := range w.coming {
		n += int64(c) * cmp.Or(w.sizes[k], warmGuess)
	}
	for _, s := range w.parked {
		n += w.size(s)
	}
	return n
}

// underPressure reports whether this machine's available memory is below twice what
// parked containers may hold.
func underPressure(budget int64) bool {
	avail, ok := runner.MemoryAvailable()
	return ok && avail < 2*budget
}

// measure waits for s to become ready and records the memory the engine reports for it
// then, for it and as its set's size. A container that ended before it was ready is
// given up (its place goes to the next refill); and when the containers are then taken
// to hold more than the budget, those of the sets wanted longest ago are given up until
// the rest fit, s first when it alone does not.
func (s *warmBox) measure(r *Runner, w *warmPool) {
	select {
	case <-s.ready:
	case <-s.dead:
		w.mu.Lock()
		parked := slices.Contains(w.parked, s)
		w.parked = slices.DeleteFunc(w.parked, func(p *warmBox) bool { return p == s })
		w.mu.Unlock()
		if parked {
			r.log.Warn("a warm container ended before its modules were imported; given up", "modules", s.key)
			s.discard(r)
		}
		return
	case <-time.After(time.Minute):
	}
	mem, err := r.memoryUsage(s.c.id)
	if err != nil {
		return // taken and removed meanwhile, or the engine is busy: it counts as its set's size
	}
	w.mu.Lock()
	s.memory = mem
	w.sizes[s.key] = mem
	held := w.held()
	var evict []*warmBox
	if mem > w.budget && slices.Contains(w.parked, s) {
		evict = append(evict, s)
		held -= mem
	}
	// The parked ones in the order their sets were last wanted, oldest first.
	byAge := slices.Clone(w.parked)
	slices.SortStableFunc(byAge, func(a, b *warmBox) int { return w.wanted[a.key].Compare(w.wanted[b.key]) })
	for _, p := range byAge {
		if held <= w.budget {
			break
		}
		if !slices.Contains(evict, p) {
			evict = append(evict, p)
			held -= w.size(p)
		}
	}
	w.parked = slices.DeleteFunc(w.parked, func(p *warmBox) bool { return slices.Contains(evict, p) })
	sizes := make([]int64, len(evict))
	for i, p := range evict {
		sizes[i] = w.size(p)
	}
	w.mu.Unlock()
	for i, p := range evict {
		r.log.Info("a warm container given up to keep within SKRIP_RUNNER_WARM_MEMORY", "modules", p.key, "memory", runner.HumanBytes(sizes[i]))
		p.discard(r)
	}
}

// memoryUsage is the memory the engine's stats give for container id now.
func (r *Runner) memoryUsage(id string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := r.cli.ContainerStats(ctx, id, client.ContainerStatsOptions{})
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var st struct {
		MemoryStats struct {
			Usage uint64 `json:"usage"`
		} `json:"memory_stats"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return 0, err
	}
	if st.MemoryStats.Usage == 0 {
		return 0, fmt.Errorf("the engine reports no memory use of container %s", id)
	}
	return int64(st.MemoryStats.Usage), nil
}

// stats implements runner.Warmer.
func (w *warmPool) stats() runner.WarmStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := runner.WarmStats{Budget: w.budget, Warm: w.warm, Cold: w.cold}
	for _, s := range w.parked {
		select {
		case <-s.ready:
			st.Parked++
			st.Bytes += s.memory
		default:
		}
	}
	return st
}

// closeAll gives up every parked container, for Close.
func (w *warmPool) closeAll(r *Runner) {
	w.mu.Lock()
	w.closed = true
	parked := w.parked
	w.parked = nil
	w.mu.Unlock()
	for _, s := range parked {
		s.discard(r)
	}
}

// WarmStats implements runner.Warmer.
func (r *Runner) WarmStats() runner.WarmStats { return r.warm.stats() }

// Prime implements runner.Warmer.
func (r *Runner) Prime(scripts []string, l runner.Limits) {
	for _, src := range scripts {
		r.warm.refill(r, runner.Imports([]byte(src)), l)
	}
}

var _ runner.Warmer = (*Runner)(nil)

// parkWarm makes a container for runs under l and has Python import modules in it.
func (r *Runner) parkWarm(modules []string, l runner.Limits) (*warmBox, error) {
	marker := strings.Replace(randomToken(), "done", "ready", 1)
	cmd := append([]string{"/bin/sh", "-c", warmSupervisor, "sh", marker, strconv.FormatInt(fsizeBlocks(l), 10)}, modules...)
	var env []string
	base := runner.RunEnv("/tmp/home", shimBin, nil)
	for _, k := range runner.SortedKeys(base) {
		env = append(env, k+"="+base[k])
	}
	shimTar, err := shimTar()
	if err != nil {
		return nil, err
	}
	c, err := r.create(context.Background(), l, "", "", cmd, env, shimTar)
	if err != nil {
		return nil, err
	}
	s := &warmBox{c: c, modules: modules, key: strings.Join(modules, ","), limits: l, ready: make(chan struct{}), dead: make(chan struct{})}
	go s.watch(marker)
	return s, nil
}

// watch reads the attach stream until the supervisor's ready marker, keeping what Python
// wrote before it (an import's warning belongs to the run's output, as in a cold start),
// and closes ready; or dead when the stream ends first.
func (s *warmBox) watch(marker string) {
	br := s.c.att.Reader
	want := []byte(marker + "\n")
	var out [3][]byte
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			close(s.dead)
			return
		}
		p := make([]byte, binary.BigEndian.Uint32(hdr[4:]))
		if _, err := io.ReadFull(br, p); err != nil {
			close(s.dead)
			return
		}
		// What an import prints is small; a flood before the run is dropped past 64 KiB
		// (the marker still shows: it comes on stdout alone, last).
		if k := hdr[0]; (k == 1 || k == 2) && len(out[k]) < 1<<16 {
			out[k] = append(out[k], p...)
		} else if k == 1 && bytes.Contains(p, want) {
			out[k] = append(out[k], want...)
		}
		if i := bytes.Index(out[1], want); i >= 0 {
			out[1] = slices.Delete(out[1], i, i+len(want))
			var early bytes.Buffer
			for k := 1; k <= 2; k++ {
				if len(out[k]) > 0 {
					binary.BigEndian.PutUint32(hdr[4:], uint32(len(out[k])))
					hdr[0] = byte(k)
					early.Write(hdr[:])
					early.Write(out[k])
				}
			}
			s.early, s.stream = early.Bytes(), br
			close(s.ready)
			return
		}
	}
}

// discard removes a parked container no run took.
func (s *warmBox) discard(r *Runner) {
	s.c.att.Close()
	r.remove(s.c.id)
}

// Why a warm container taken for a run did not serve it.
var (
	errWarmDead = errors.New("the warm container has ended")
	errWarmWall = errors.New("the warm container did not import its modules within the run's wall time")
)

// startWarm hands a run to s: waits for it (awaitWarm), copies the inputs in and sends
// the start line, with what the wait left of the wall time. On an error s is removed;
// errWarmDead means the run starts cold, errWarmWall that it has timed out.
func (r *Runner) startWarm(ctx context.Context, s *warmBox, l runner.Limits, in []byte, token string, began time.Time) error {
	err := r.awaitWarm(ctx, s, l)
	left := l.WallTime - time.Since(began)
	if err == nil && left < time.Millisecond {
		err = errWarmWall
	}
	if err == nil {
		// A container that ended since it was found running fails here, if at all: the
		// copy or the start line's write.
		err = r.start(ctx, s.c, in, fmt.Sprintf("%s %.3f %d\n", token, left.Seconds(), fsizeBlocks(l)))
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", errWarmDead, err)
		}
	}
	if err != nil {
		s.discard(r)
		if errors.Is(err, errWarmDead) {
			r.warm.mu.Lock()
			r.warm.warm--
			r.warm.cold++
			r.warm.mu.Unlock()
		}
	}
	return err
}

// awaitWarm waits for s to be ready, at most for the run's wall time: importing the
// modules is part of the run, as in a cold start, so when the time runs out the run has
// timed out (errWarmWall), with no second start. errWarmDead: the container has ended,
// before it was ready or since (killed from outside, or by the kernel under memory
// pressure). The engine's answer to the wait may come well after the container ended, so
// a ready one is also inspected.
func (r *Runner) awaitWarm(ctx context.Context, s *warmBox, l runner.Limits) error {
	timeout := time.NewTimer(l.WallTime)
	defer timeout.Stop()
	select {
	case <-s.ready:
	case <-s.dead:
		return errWarmDead
	case <-timeout.C:
		return errWarmWall
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-s.c.waiter.Result:
		return errWarmDead
	case <-s.c.waiter.Error:
		return errWarmDead
	default:
	}
	insp, err := r.cli.ContainerInspect(ctx, s.c.id, client.ContainerInspectOptions{})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return fmt.Errorf("%w: %w", errWarmDead, err)
	case insp.Container.State == nil || !insp.Container.State.Running:
		return errWarmDead
	}
	return nil
}
