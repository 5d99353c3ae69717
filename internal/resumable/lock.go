package resumable

import (
	"context"
	"sync"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/staging"
)

// locker is tusd's lock of an upload, kept in the database so that it holds across API
// nodes: one request at a time writes to an upload or reads its offset. A request that
// wants a held lock asks its holder to let go, as tusd's own lockers do: the holder stops
// reading its body, keeps the bytes it had, and answers; then the new request reads the
// offset those bytes made. So a client that lost its connection and asks for the offset
// (HEAD) gets the one after every byte the server received, not one from before the
// dropped request had stored them. The holder on this node is asked at once; one on
// another node learns it when it renews its lease.
type locker struct {
	files *staging.Service
	mu    sync.Mutex
	held  map[string]*lock // by upload id, the locks this node holds
}

// askAfter is how long a request waits for a held lock before it asks the holder to let go.
const askAfter = 2 * time.Second

// renewEvery is how often a holder renews its lease and looks whether its lock is wanted.
const renewEvery = 250 * time.Millisecond

func newLocker(files *staging.Service) *locker {
	return &locker{files: files, held: map[string]*lock{}}
}

func (l *locker) NewLock(id string) (tusd.Lock, error) {
	return &lock{l: l, id: id, holder: ids.New("lk")}, nil
}

type lock struct {
	l      *locker
	id     string
	holder string
	// Set while held.
	release func() // asks the request holding it to let go
	stop    chan struct{}
	done    chan struct{}
	// Under l.mu: whether the request is taking bytes (a holder that is not is about to
	// answer, and is waited for), and whether another request wants the lock.
	writing, wanted bool
}

// letGo asks k's request to let go now if it is taking bytes, or once it starts to. It
// is called with l.mu held: the request set writing under l.mu after tusd had set up
// its body, so tusd's reading of that body when asked happens after it was set.
func (k *lock) letGo() {
	k.wanted = true
	if k.writing {
		k.release()
	}
}

// writing notes that the request holding upload id's lock on this node is taking bytes:
// from now on a request that wants the lock stops it.
func (l *locker) writing(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := l.held[id]; k != nil {
		k.writing = true
		if k.wanted {
			k.release()
		}
	}
}

// Lock takes the lock, asking its holder to let go, until ctx ends (tusd's
// AcquireLockTimeout). An upload that does not exist needs no lock: the request goes on
// to answer 404.
func (k *lock) Lock(ctx context.Context, requestUnlock func()) error {
	start := time.Now()
	for {
		ask := time.Since(start) >= askAfter
		acquired, exists, err := k.l.files.LockUpload(ctx, k.id, k.holder, ask)
		if err != nil {
			return err
		}
		if !exists {
			return nil
		}
		if acquired {
			k.release, k.stop, k.done = sync.OnceFunc(requestUnlock), make(chan struct{}), make(chan struct{})
			k.l.mu.Lock()
			k.l.held[k.id] = k
			k.l.mu.Unlock()
			go k.renew()
			return nil
		}
		// The holder is first given askAfter to end by itself: a request whose client
		// went away reads what had already reached the server, stores it and ends; asked
		// at once, it would stop short and those bytes would be sent again.
		if ask {
			k.l.mu.Lock()
			if h := k.l.held[k.id]; h != nil {
				h.letGo()
			}
			k.l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return tusd.ErrLockTimeout
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// renew keeps the lease until Unlock, and lets go when another request wants the lock
// or the lease was lost.
func (k *lock) renew() {
	defer close(k.done)
	t := time.NewTicker(renewEvery)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
			held, wanted, err := k.l.files.RenewUploadLock(context.Background(), k.id, k.holder)
			if err == nil && (!held || wanted) {
				k.l.mu.Lock()
				k.letGo()
				k.l.mu.Unlock()
			}
		}
	}
}

func (k *lock) Unlock() error {
	if k.stop == nil {
		return nil
	}
	close(k.stop)
	<-k.done
	k.l.mu.Lock()
	if k.l.held[k.id] == k {
		delete(k.l.held, k.id)
	}
	k.l.mu.Unlock()
	return k.l.files.UnlockUpload(context.Background(), k.id, k.holder)
}
