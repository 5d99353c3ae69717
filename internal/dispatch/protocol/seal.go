package protocol

import (
	"bytes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/chacha20poly1305"
)

// Run inputs wait for their worker in the shared work bucket, which every worker may
// read. Each file is sealed there with a key of its own (InputKey), which an API node
// hands over only in the reply to a claim of a run that holds the file: a worker opens
// the files of runs it holds, and sees only ciphertext of the others, under names that
// do not say whose or what they are (SealedKey).
//
// A sealed object is a header (sealMagic and a random salt of saltSize bytes) and a
// sequence of chunks of SealChunk plaintext bytes (the last one shorter, and one empty
// chunk for an empty file), each sealed with ChaCha20-Poly1305 under the object's own
// key, derived from the file's key and the salt, and a nonce made of the chunk's number
// and whether it is the last one: a chunk cannot be dropped, moved or repeated, and the
// object cannot be cut short at a chunk's end, without opening failing. The key is
// derived from the file's checksum, but a file that changed while it was sent is sealed
// under the same one: the salt makes every sealing's key its own, so numbered nonces
// never meet two plaintexts. Sealing and opening hold one chunk at a time, whatever the
// file's size. Open also reads an object without a header, as API nodes sealed them
// before the salt (the file's key itself sealed the chunks).

// SealChunk is how many plaintext bytes each sealed chunk holds.
const SealChunk = 64 << 10

// InputKey is the key of one input file of a run, by the file's checksum, as a claim's
// reply hands it over.
type InputKey struct {
	SHA256 string `json:"sha256"`
	Key    []byte `json:"key"`
}

// SealedKey is the work bucket's key of the file sealed with key: it names neither the
// file nor its checksum, and only a holder of the key can find it.
func SealedKey(key []byte) string {
	h := sha256.New()
	h.Write([]byte("skrip sealed object name\x00"))
	h.Write(key)
	return "work/sealed/" + hex.EncodeToString(h.Sum(nil))
}

// ErrSealed is an object that does not open with its key: damaged, cut short, or
// sealed with another key.
var ErrSealed = errors.New("the sealed object does not open with its key: it is damaged, cut short or not this file")

// The header of a sealed object: sealMagic, then the salt.
const (
	sealMagic = "skrip-s2"
	saltSize  = 24
)

// objectKey is the key that seals the chunks of the object with salt, sealed with key.
func objectKey(key, salt []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("skrip sealed object key\x00"))
	m.Write(salt)
	return m.Sum(nil)
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	a, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, fmt.Errorf("a sealing key: %w", err)
	}
	return a, nil
}

func nonce(a cipher.AEAD, n uint64, last bool) []byte {
	b := make([]byte, a.NonceSize())
	binary.BigEndian.PutUint64(b, n)
	if last {
		b[len(b)-1] = 1
	}
	return b
}

// Seal returns a reader of r's bytes sealed with key, under a salt of its own.
func Seal(r io.Reader, key []byte) (io.Reader, error) {
	salt := make([]byte, saltSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	return sealSalted(r, key, salt)
}

func sealSalted(r io.Reader, key, salt []byte) (io.Reader, error) {
	if _, err := newAEAD(key); err != nil {
		return nil, err
	}
	a, err := newAEAD(objectKey(key, salt))
	if err != nil {
		return nil, err
	}
	header := append([]byte(sealMagic), salt...)
	return io.MultiReader(bytes.NewReader(header), &chunker{aead: a, src: r, in: make([]byte, SealChunk+1), chunk: SealChunk, seal: true}), nil
}

// Open returns a reader of the bytes r holds sealed with key. A read fails with
// ErrSealed when they were not sealed with key, or were changed or cut short.
func Open(r io.Reader, key []byte) (io.Reader, error) {
	if _, err := newAEAD(key); err != nil {
		return nil, err
	}
	return &opener{src: r, key: key}, nil
}

// opener reads a sealed object's header on its first Read, and opens the chunks after
// it with the object's key; an object without one, with key itself.
type opener struct {
	src io.Reader
	key []byte
	c   *chunker
	err error
}

func (o *opener) Read(p []byte) (int, error) {
	if o.c == nil && o.err == nil {
		o.c, o.err = o.start()
	}
	if o.err != nil {
		return 0, o.err
	}
	return o.c.Read(p)
}

func (o *opener) start() (*chunker, error) {
	head := make([]byte, len(sealMagic)+saltSize)
	n, err := io.ReadFull(o.src, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	key, src := o.key, o.src
	if n == len(head) && string(head[:len(sealMagic)]) == sealMagic {
		key = objectKey(o.key, head[len(sealMagic):])
	} else {
		src = io.MultiReader(bytes.NewReader(head[:n]), o.src) // sealed before the salt
	}
	a, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	c := SealChunk + a.Overhead()
	return &chunker{aead: a, src: src, in: make([]byte, c+1), chunk: c}, nil
}

// chunker seals or opens src chunk by chunk. It reads one byte past a chunk before it
// handles it, to know whether the chunk is the last.
type chunker struct {
	aead  cipher.AEAD
	src   io.Reader
	seal  bool
	chunk int    // bytes of src per chunk
	in    []byte // chunk+1 bytes: a chunk and the first byte of the next
	have  int    // bytes of in filled
	out   []byte // the chunk sealed or opened; out[off:] is unread
	off   int
	n     uint64 // the number of the next chunk
	done  bool   // the last chunk is in out
	err   error
}

func (c *chunker) Read(p []byte) (int, error) {
	for c.off == len(c.out) {
		if c.err != nil {
			return 0, c.err
		}
		if c.done {
			return 0, io.EOF
		}
		c.err = c.next()
	}
	n := copy(p, c.out[c.off:])
	c.off += n
	return n, nil
}

func (c *chunker) next() error {
	n, err := io.ReadFull(c.src, c.in[c.have:])
	c.have += n
	last := false
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		last = true
	default:
		return err
	}
	size := c.have
	if !last {
		size = c.chunk
	}
	if c.seal {
		c.out = c.aead.Seal(c.out[:0], nonce(c.aead, c.n, last), c.in[:size], nil)
	} else {
		out, err := c.aead.Open(c.out[:0], nonce(c.aead, c.n, last), c.in[:size], nil)
		if err != nil {
			c.out, c.off = c.out[:0], 0
			return ErrSealed
		}
		c.out = out
	}
	c.off = 0
	c.n++
	c.done = last
	c.have = copy(c.in, c.in[size:c.have])
	return nil
}
