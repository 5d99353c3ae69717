package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// One process per data directory (docs/spec.md §12), whatever the blob store: two
// servers on one data dir would both run the janitor over one database and one blob
// store, and with the embedded nats-server both would serve its one store directory, so
// that stopping either breaks the other. Two workers on one data dir would share one
// worker id (a hash of the host and the data dir), and each wipes worker/inputs when it
// starts, under the other's runs. fsblob locks its own tree too, but that lock covers
// only SKRIP_BLOB=fs; this one is the process's, taken before anything in the data dir
// is opened.

// lockName is the lock file in the data dir.
const lockName = "skrip.lock"

// ErrDataDirInUse means another process holds the data directory's lock.
var ErrDataDirInUse = errors.New("data directory in use by another skrip process")

// dataDirLock holds a data directory's lock until Close.
type dataDirLock struct{ f *os.File }

// lockDataDir takes the exclusive lock of data dir dir for this process, and writes into
// the lock file who holds it (the process id, the host and what it runs as), so that a
// second process refused can name the first. A filesystem without locks (ENOLCK,
// EOPNOTSUPP) is used unlocked, as fsblob does: refusing to start there would refuse
// every server.
func lockDataDir(dir, role string) (*dataDirLock, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	p := filepath.Join(abs, lockName)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the data dir's lock file %s: %w", p, err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		holder, _ := os.ReadFile(p)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "a process that did not say which"
		}
		return nil, fmt.Errorf("%w: the data directory %s is held by %s (lock file %s); one skrip server or worker per data directory: "+
			"stop that one, or give this %s another SKRIP_DATA_DIR", ErrDataDirInUse, abs, who, p, role)
	case err != nil: // ENOLCK, EOPNOTSUPP, …: no locks here
		f.Close()
		return &dataDirLock{}, nil
	}
	host, _ := os.Hostname()
	f.Truncate(0)
	f.WriteAt([]byte("skrip "+role+", pid "+strconv.Itoa(os.Getpid())+" on "+host+"\n"), 0)
	return &dataDirLock{f: f}, nil
}

// Close releases the lock. The file stays: removing it would let a third process lock a
// new file of that name while a second still waits on the old one.
func (l *dataDirLock) Close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
