package hashcopy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestVerify: a stream whose bytes match its sum reads whole; one with other bytes of the
// same size, more bytes, or fewer ends in an error, and never hands over its last bytes
// with a clean io.EOF.
func TestVerify(t *testing.T) {
	good := strings.Repeat("skrip ", 50000)
	s := sha256.Sum256([]byte(good))
	sum := "sha256:" + hex.EncodeToString(s[:])
	bad := good[:len(good)-1] + "X"
	tests := []struct {
		name, body string
		size       int64
		sum        string
		want       error
	}{
		{"good", good, int64(len(good)), sum, nil},
		{"good, bare hex", good, int64(len(good)), hex.EncodeToString(s[:]), nil},
		{"no sum recorded", bad, int64(len(bad)), "", nil},
		{"same size, other bytes", bad, int64(len(good)), sum, ErrMismatch},
		{"longer", good + "x", int64(len(good)), sum, ErrMismatch},
		{"shorter", good[:100], int64(len(good)), sum, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := io.ReadAll(Verify(iotest.HalfReader(strings.NewReader(tt.body)), tt.size, tt.sum))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if tt.want == ErrMismatch && len(got) >= len(good) {
				t.Fatalf("read %d bytes of a bad stream, all of them", len(got))
			}
		})
	}
}
