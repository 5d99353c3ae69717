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
		if want := header + n + 16*chunks; len(s) != want {
			t.Errorf("%d bytes sealed into %d, want %d", n, len(s), want)
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
	c, h := SealChunk+16, header
	flipped := bytes.Clone(s)
	flipped[h+c+7] ^= 1
	salted := bytes.Clone(s)
	salted[h-1] ^= 1
	swapped := append(append(append(bytes.Clone(s[:h]), s[h+c:h+2*c]...), s[h:h+c]...), s[h+2*c:]...)
	for name, b := range map[string][]byte{
		"another key":          nil,
		"a byte flips":         flipped,
		"another salt":         salted,
		"cut at a chunk's end": s[:h+2*c],
		"chunks swapped":       swapped,
		"without its header":   s[h:],
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
// during an upgrade: the sealed form of a file (with a given salt) changes only on
// purpose.
func TestSealUnchanged(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i)
	}
	plain := bytes.Repeat([]byte("skrip "), SealChunk/3) // two chunks, the last one short
	r, err := sealSalted(bytes.NewReader(plain), key, bytes.Repeat([]byte{7}, saltSize))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := opened(b, key); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("the pinned form opens to %d bytes, %v", len(got), err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != sealedSum {
		t.Errorf("the sealed form's checksum is %s, was %s", got, sealedSum)
	}
}

// sealedSum changed on purpose when objects got their header and salt (before:
// 8fb52e3cf564f7af0f119c0cb5d6aca0de05bd3a3349f0430f7cb7c823ec3853, which
// TestOpenWithoutHeader's form still opens); workers of the version before cannot open
// the new form (docs/cluster.md).
const sealedSum = "61577f7efcc1c90c7c0de260a8736c61f0e010b31e7c5b43a969c53182a23e3a"

// header is how long a sealed object's header is.
const header = len(sealMagic) + saltSize

// TestSealNeverRepeatsANonce: a file that changed while it was sent is sealed with the
// key of the checksum it was sent for; the salt keeps its chunks from sharing a key
// stream with the file's own (whose XOR with the other's would give the XOR of the two
// plaintexts away), and sealing one file twice gives two forms that both open.
func TestSealNeverRepeatsANonce(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	p1, p2 := bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 1000)
	s1, s2 := sealed(t, p1, key), sealed(t, p2, key)
	same := 0
	for i := range 1000 {
		if s1[header+i]^s2[header+i] == p1[i]^p2[i] {
			same++
		}
	}
	if same > 100 {
		t.Fatalf("two plaintexts sealed with one key share their key stream (%d of 1000 bytes)", same)
	}
	again := sealed(t, p1, key)
	if bytes.Equal(again, s1) {
		t.Fatal("one file sealed twice gave the same bytes")
	}
	for _, b := range [][]byte{s1, again} {
		if got, err := opened(b, key); err != nil || !bytes.Equal(got, p1) {
			t.Fatalf("opened %d bytes, %v", len(got), err)
		}
	}
}

// TestOpenWithoutHeader: an object sealed before the salt (chunks under the file's key,
// no header), as API nodes of the version before left them, still opens.
func TestOpenWithoutHeader(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	for _, n := range []int{0, 5, SealChunk + 3} {
		plain := make([]byte, n)
		rand.Read(plain)
		a, err := newAEAD(key)
		if err != nil {
			t.Fatal(err)
		}
		old, err := io.ReadAll(&chunker{aead: a, src: bytes.NewReader(plain), in: make([]byte, SealChunk+1), chunk: SealChunk, seal: true})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := opened(old, key); err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%d bytes sealed without a header: opened %d bytes, %v", n, len(got), err)
		}
	}
}
