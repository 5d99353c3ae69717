package dispatch

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// A run's files are sealed in the work bucket (protocol.Seal), each with a key derived
// from one secret the API nodes share and the file's checksum: any API node finds the
// key of any file, and a file queued again (a session file, say) is the same sealed
// object, sent once. The secret lives in the KV bucket Names.Keys, which workers may
// not touch (natsserver.Permissions); a worker gets the keys of a run's files in the
// reply to its claim of the run, and of no other.

const secretKey = "inputs" // the secret's key in Names.Keys

// keyring derives the keys of run files from the API nodes' secret, read once.
type keyring struct {
	js     jetstream.JetStream
	bucket string // the secret's, Names.Keys

	mu     sync.Mutex
	secret []byte
}

// setupKeys makes the secret's bucket, or leaves the one there.
func setupKeys(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) error {
	_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, Replicas: replicas,
		Description: "skrip: the API nodes' secret that seals run files (docs/cluster.md)"})
	if errors.Is(err, jetstream.ErrBucketExists) {
		return nil
	}
	return err
}

// key is the key of the run file with checksum sha.
func (k *keyring) key(ctx context.Context, sha string) ([]byte, error) {
	secret, err := k.load(ctx)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("skrip run file\x00"))
	m.Write([]byte(sha))
	return m.Sum(nil), nil
}

// load reads the secret, making it when no API node has yet: the first one made wins.
func (k *keyring) load(ctx context.Context) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.secret != nil {
		return k.secret, nil
	}
	kv, err := k.js.KeyValue(ctx, k.bucket)
	if err != nil {
		return nil, fmt.Errorf("the sealing secret's bucket %s: %w", k.bucket, err)
	}
	for range 3 {
		e, err := kv.Get(ctx, secretKey)
		if err == nil {
			if len(e.Value()) != 32 {
				return nil, fmt.Errorf("the sealing secret in %s holds %d bytes, not 32", k.bucket, len(e.Value()))
			}
			k.secret = e.Value()
			return k.secret, nil
		}
		if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("reading the sealing secret: %w", err)
		}
		secret := make([]byte, 32)
		rand.Read(secret)
		if _, err := kv.Create(ctx, secretKey, secret); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("making the sealing secret: %w", err)
		}
		// Made, or another node made it first: read what won.
	}
	return nil, errors.New("the sealing secret keeps coming and going")
}
