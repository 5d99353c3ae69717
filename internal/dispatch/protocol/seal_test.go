package protocol

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func sealed(t *testing.T, plain, key []byte) []byte {
	t.Helper()
	r, err := Seal(iotest.HalfReader(bytes.NewReader(plain)), key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func opened(sealed, key []byte) ([]byte, error) {
	r, err := Open(iotest.OneByteReader(bytes.NewReader(sealed)), key)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// TestSealRoundTrip: a file of any size opens to its bytes with its key, and its sealed
// form is as long as its chunks say.
func TestSealRoundTrip(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	for _, n := range []int{0, 1, SealChunk - 1, SealChunk, SealChunk + 1, 2 * SealChunk, 3*SealChunk + 5} {
		plain := make([]byte, n)
		rand.Read(plain)
		s := sealed(t, plain, key)
		chunks := max(1, (n+SealChunk-1)/SealChunk)
		if len(s) != n+16*chunks {
			t.Errorf("%d bytes sealed into %d, want %d", n, len(s), n+16*chunks)
		}
		if bytes.Contains(s, plain[:min(n, 64)]) && n >= 16 {
			t.Errorf("%d bytes: the sealed form holds the plaintext", n)
		}
		got, err := opened(s, key)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%d bytes: opened %d bytes, %v", n, len(got), err)
		}
	}
}

// TestSealRefusesTampering: another key, a changed byte, a chunk cut off at its end or
// swapped with another, all fail with ErrSealed rather than give bytes that are not
// the file's.
func TestSealRefusesTampering(t *testing.T) {
	key, other := make([]byte, 32), make([]byte, 32)
	rand.Read(key)
	rand.Read(other)
	plain := make([]byte, 3*SealChunk)
	rand.Read(plain)
	s := sealed(t, plain, key)
	c := SealChunk + 16
	flipped := bytes.Clone(s)
	flipped[c+7] ^= 1
	swapped := append(append(bytes.Clone(s[c:2*c]), s[:c]...), s[2*c:]...)
	for name, b := range map[string][]byte{
		"another key":          nil,
		"a byte flips":         flipped,
		"cut at a chunk's end": s[:2*c],
		"chunks swapped":       swapped,
		"empty":                {},
	} {
		k := key
		if b == nil {
			b, k = s, other
		}
		if _, err := opened(b, k); !errors.Is(err, ErrSealed) {
			t.Errorf("%s: %v, want ErrSealed", name, err)
		}
	}
	if SealedKey(key) == SealedKey(other) || len(SealedKey(key)) != len("work/sealed/")+64 {
		t.Errorf("sealed keys: %s, %s", SealedKey(key), SealedKey(other))
	}
}

// TestSealUnchanged: API nodes seal and workers open, and nodes of two versions meet
// during an upgrade: the sealed form of a file changes only on purpose.
func TestSealUnchanged(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	plain := bytes.Repeat([]byte("skrip "), SealChunk/3) // two chunks, the last one short
	sum := sha256.Sum256(sealed(t, plain, key))
	if got := hex.EncodeToString(sum[:]); got != sealedSum {
		t.Errorf("the sealed form's checksum is %s, was %s", got, sealedSum)
	}
}

const sealedSum = "8fb52e3cf564f7af0f119c0cb5d6aca0de05bd3a3349f0430f7cb7c823ec3853"
