package docker

import (
	"context"
	"sync"
	"time"

	"github.com/skrip-dev/skrip/internal/runner"
)

// pool keeps a few containers created, attached and started ahead of runs, each waiting
// for its run's files and start line: a run then skips the engine's create and start. A
// container serves one run and is removed after it; containers are never reused.
type pool struct {
	r      *Runner
	size   int
	limits runner.Limits
	ready  chan *box
	wake   chan struct{}
	stop   context.CancelFunc
	done   sync.WaitGroup
}

// startPool fills a pool of size containers with limits l in the background. A nil pool
// (size 0) serves nothing.
func (r *Runner) startPool(size int, l runner.Limits) *pool {
	if size <= 0 {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &pool{r: r, size: size, limits: l, ready: make(chan *box, size), wake: make(chan struct{}, 1), stop: stop}
	p.done.Add(1)
	go p.fill(ctx)
	return p
}

func (p *pool) fill(ctx context.Context) {
	defer p.done.Done()
	for {
		for len(p.ready) < p.size && ctx.Err() == nil {
			c, err := p.r.prepare(ctx, p.limits, "", "")
			if err != nil {
				if ctx.Err() == nil {
					p.r.log.Warn("warming a runner container", "error", err)
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
				}
				continue
			}
			p.ready <- c
		}
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
	}
}

// take returns a warm container when one with limits l (the wall time aside, which the
// start line carries) is ready, and nil otherwise.
func (p *pool) take(l runner.Limits) *box {
	if p == nil {
		return nil
	}
	want, have := l, p.limits
	want.WallTime, have.WallTime = 0, 0
	if want != have {
		return nil
	}
	select {
	case c := <-p.ready:
		select {
		case p.wake <- struct{}{}:
		default:
		}
		return c
	default:
		return nil
	}
}

// close stops filling and removes the containers that never got a run.
func (p *pool) close() {
	if p == nil {
		return
	}
	p.stop()
	p.done.Wait()
	for {
		select {
		case c := <-p.ready:
			c.att.Close()
			p.r.remove(c.id)
		default:
			return
		}
	}
}
