// Package hashcopy copies a stream while computing its SHA-256, overlapping the hashing
// and the writing with the reading. The blob store uses it on upload and the client on
// download.
package hashcopy

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
)

const (
	// chunkSize is the size of each buffer passed between reading, writing and hashing.
	chunkSize = 256 << 10
	// inFlight is how many chunks can be between reading and the end of hashing: one
	// being read, one written, one hashed, and one to spare for the stage that runs ahead.
	inFlight = 4
)

// Copy copies r to w and returns the byte count and sha256. It runs as a pipeline of
// three goroutines, each chunk read, then written, then hashed, so that the next chunk
// is read while the last one is written and the one before it hashed: on two cores a
// large upload costs about the slowest of the three rather than their sum. Each chunk is
// filled before it is written, since a multipart part or a chunked body returns a few KiB
// per Read. w sees one Write at a time, in order, from one goroutine, and Copy returns
// only after the last one.
//
// A read error is returned wrapped ("read: …"), a write error as it is, and a cancelled
// ctx (checked between chunks) as ctx.Err(). Nothing is written after a write error.
func Copy(ctx context.Context, w io.Writer, r io.Reader) (int64, []byte, error) {
	free := make(chan []byte, inFlight)
	for range inFlight {
		free <- make([]byte, chunkSize)
	}
	toWrite := make(chan []byte, inFlight)
	toHash := make(chan []byte, inFlight)
	writeFailed := make(chan struct{}) // closed when a Write failed
	var size int64                     // bytes written; read once writeErr has been received
	writeErr := make(chan error, 1)
	sum := make(chan []byte, 1)
	go func() {
		var err error
		for b := range toWrite {
			if err == nil {
				if _, err = w.Write(b); err != nil {
					close(writeFailed)
				} else {
					size += int64(len(b))
				}
			}
			toHash <- b
		}
		close(toHash)
		writeErr <- err
	}()
	go func() {
		h := sha256.New()
		for b := range toHash {
			h.Write(b)
			free <- b[:cap(b)]
		}
		sum <- h.Sum(nil)
	}()
	readErr := func() error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			var buf []byte
			select {
			case buf = <-free:
			case <-writeFailed:
				return nil
			}
			n, rerr := io.ReadFull(r, buf)
			if n > 0 {
				toWrite <- buf[:n]
			} else {
				free <- buf
			}
			switch rerr {
			case nil:
			case io.EOF, io.ErrUnexpectedEOF:
				return nil
			default:
				return fmt.Errorf("read: %w", rerr)
			}
		}
	}()
	close(toWrite)
	werr := <-writeErr
	s := <-sum
	if werr != nil {
		return size, s, werr
	}
	return size, s, readErr
}
