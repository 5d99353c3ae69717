// Package hashcopy copies a stream while computing its SHA-256, overlapping the hashing
// with the I/O. The blob store uses it on upload and the client on download.
package hashcopy

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
)

// chunkSize is the size of each buffer passed between reading, writing and hashing.
const chunkSize = 256 << 10

// Copy copies r to w and returns the byte count and sha256. Hashing runs in its
// own goroutine on the chunk just written while the next one is read, so on two cores a
// large upload costs about max(hash, I/O) rather than their sum. Each chunk is filled
// before it is written: a multipart part or a chunked body returns a few KiB per Read.
func Copy(ctx context.Context, w io.Writer, r io.Reader) (int64, []byte, error) {
	const inFlight = 3
	free := make(chan []byte, inFlight)
	for range inFlight {
		free <- make([]byte, chunkSize)
	}
	toHash := make(chan []byte, inFlight)
	sum := make(chan []byte, 1)
	go func() {
		h := sha256.New()
		for b := range toHash {
			h.Write(b)
			free <- b[:cap(b)]
		}
		sum <- h.Sum(nil)
	}()
	var size int64
	err := func() error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			buf := <-free
			n, rerr := io.ReadFull(r, buf)
			if n > 0 {
				if _, err := w.Write(buf[:n]); err != nil {
					return err
				}
				size += int64(n)
			}
			toHash <- buf[:n]
			switch rerr {
			case nil:
			case io.EOF, io.ErrUnexpectedEOF:
				return nil
			default:
				return fmt.Errorf("read: %w", rerr)
			}
		}
	}()
	close(toHash)
	s := <-sum
	return size, s, err
}
