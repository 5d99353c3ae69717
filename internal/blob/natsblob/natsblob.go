// Package natsblob is the blob.Store kept in a JetStream Object Store bucket. It owns that
// bucket (one object per key, content type in the object's headers) and writes and reads
// its chunks itself, so that a Put is all or nothing. The NATS connection is the caller's.
package natsblob

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
)

// Defaults for Config.
const (
	DefaultBucket  = "skrip-files"
	DefaultTimeout = 10 * time.Second
)

// Config selects and sizes the bucket.
type Config struct {
	// Bucket is the Object Store bucket name; DefaultBucket when empty.
	Bucket string
	// MaxBytes caps the storage of a bucket New creates; 0 means unlimited.
	MaxBytes int64
	// Replicas is the number of stream replicas of a bucket New creates; 1 when 0.
	Replicas int
	// Timeout bounds each JetStream request, and how long a reader waits for the next
	// chunk of an object; DefaultTimeout when 0. It does not bound a whole transfer.
	Timeout time.Duration
	// Node names this server among those sharing the bucket. The chunks it writes carry
	// it, so that Sweep can remove a crashed Put's chunks of this node at once while
	// leaving other nodes' uploads in flight alone.
	Node string
	// Exclusive says that no other process writes to the bucket (the embedded server):
	// Sweep then removes every unreferenced chunk that no Put of this store is writing.
	Exclusive bool
	// DropMarkers makes Delete leave no delete marker: for a bucket no one watches (a
	// cluster's work bucket), whose every key is new, markers would only pile up, and
	// listing the bucket reads each one.
	DropMarkers bool
	// TTL, when set, is how long the objects of a bucket New creates are kept: a
	// bucket of transfers no one else cleans up (a cluster worker's own bucket).
	TTL time.Duration
	// Description describes a bucket New creates, for whoever lists the account's
	// buckets; "skrip: file bytes" when empty.
	Description string
	// Log receives warnings, such as a bucket whose settings differ from these or a
	// transfer that went on after a leader change; nil discards them.
	Log *slog.Logger
}

// Store is a blob.Store backed by one JetStream Object Store bucket.
type Store struct {
	nc          *nats.Conn
	js          jetstream.JetStream
	obs         jetstream.ObjectStore
	stream      jetstream.Stream // the bucket's stream, for writes and purges
	bucket      string
	timeout     time.Duration
	node        string
	exclusive   bool
	dropMarkers bool
	chunk       int // the size of the chunks a Put writes (fitChunk)

	inPuts blob.InFlight // NUIDs whose chunks a Put of this store is writing

	cfg Config // as New was given it, for Sibling
	// renewals counts the consumers a reader replaced because they stopped delivering
	// (receive): none in a healthy cluster, so tests and the log can tell a stall.
	renewals atomic.Int64

	log    *slog.Logger
	mu     sync.Mutex
	leader string // the stream's leader as last seen, to tell a stalled ack from a lost one
}

var _ blob.Store = (*Store)(nil)

// New opens the bucket, creating it when it is missing, and returns a store using it. An
// existing bucket is the operator's: its settings (size, description, replicas, …) are
// left as they are, and a replica count other than cfg.Replicas is only logged. The
// store does not own nc: Close leaves it open.
func New(ctx context.Context, nc *nats.Conn, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = -1
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(nc,
		jetstream.WithDefaultTimeout(cfg.Timeout),
		jetstream.WithPublishAsyncTimeout(cfg.Timeout))
	if err != nil {
		return nil, fmt.Errorf("natsblob: %w", err)
	}
	obs, err := openBucket(ctx, js, cfg)
	if err != nil {
		return nil, fmt.Errorf("natsblob: bucket %q: %w", cfg.Bucket, err)
	}
	stream, err := js.Stream(ctx, streamName(cfg.Bucket))
	if err != nil {
		return nil, fmt.Errorf("natsblob: bucket %q: %w", cfg.Bucket, err)
	}
	if have := stream.CachedInfo().Config.Replicas; have != cfg.Replicas {
		cfg.Log.Warn("the Object Store bucket has another replica count than SKRIP_NATS_REPLICAS; skrip leaves it as it is",
			"bucket", cfg.Bucket, "setting", "SKRIP_NATS_REPLICAS", "bucket_replicas", have, "configured_replicas", cfg.Replicas)
	}
	s := &Store{nc: nc, js: js, obs: obs, stream: stream, bucket: cfg.Bucket, timeout: cfg.Timeout,
		node: cfg.Node, exclusive: cfg.Exclusive, dropMarkers: cfg.DropMarkers, log: cfg.Log,
		chunk: fitChunk(nc.MaxPayload()), cfg: cfg}
	s.noteLeader(stream.CachedInfo())
	return s, nil
}

// openBucket opens the bucket, or creates it with cfg when it is missing. Two servers
// starting at once may both try to create it; the loser opens the winner's.
func openBucket(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.ObjectStore, error) {
	obs, err := js.ObjectStore(ctx, cfg.Bucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return obs, err
	}
	obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      cfg.Bucket,
		Description: cmp.Or(cfg.Description, "skrip: file bytes"),
		MaxBytes:    cfg.MaxBytes,
		Replicas:    cfg.Replicas,
		Storage:     jetstream.FileStorage,
		TTL:         cfg.TTL,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		return js.ObjectStore(ctx, cfg.Bucket)
	}
	return obs, err
}

const siblingDescription = "skrip: what one worker writes (reports, artifacts, sandbox transfers); only it may (docs/cluster.md)"

// Bucket is the store's bucket.
func (s *Store) Bucket() string { return s.bucket }

// Sibling opens bucket on the same connection and with the same settings, creating it
// with ttl (Config.TTL) when it is missing. Siblings are a cluster's per-worker buckets.
func (s *Store) Sibling(ctx context.Context, bucket string, ttl time.Duration) (blob.Store, error) {
	cfg := s.cfg
	cfg.Bucket, cfg.TTL, cfg.Exclusive, cfg.Description = bucket, ttl, false, siblingDescription
	return New(ctx, s.nc, cfg)
}

// SiblingCapped is Sibling, creating a missing bucket with maxBytes as its size cap (0:
// the same as this store's) as well.
func (s *Store) SiblingCapped(ctx context.Context, bucket string, ttl time.Duration, maxBytes int64) (blob.Store, error) {
	cfg := s.cfg
	cfg.Bucket, cfg.TTL, cfg.Exclusive, cfg.Description = bucket, ttl, false, siblingDescription
	if maxBytes != 0 {
		cfg.MaxBytes = maxBytes
	}
	return New(ctx, s.nc, cfg)
}

// Get opens key and skips to off. The returned reader fetches chunks as it is read and
// stops when ctx ends. Replaced bytes are not kept: when the object is overwritten or
// deleted while being read, the reader fails soon after. Config.Timeout bounds the wait
// for any one chunk.
func (s *Store) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, blob.Info, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, blob.Info{}, err
	}
	if off < 0 {
		return nil, blob.Info{}, fmt.Errorf("natsblob: get %s: negative offset %d", key, off)
	}
	info, err := s.getInfo(ctx, key)
	if err != nil {
		return nil, blob.Info{}, fmt.Errorf("natsblob: get %s: %w", key, err)
	}
	bi, err := toInfo(info)
	if err != nil {
		return nil, blob.Info{}, fmt.Errorf("natsblob: get %s: %w", key, err)
	}
	if off >= bi.Size || n == 0 {
		return io.NopCloser(strings.NewReader("")), bi, nil
	}
	cr, err := s.openChunks(ctx, info, off, n)
	if err != nil {
		return nil, blob.Info{}, fmt.Errorf("natsblob: get %s: %w", key, err)
	}
	if n < 0 {
		return cr, bi, nil
	}
	return limitedReader{Reader: io.LimitReader(cr, n), Closer: cr}, bi, nil
}

// Stat reads key's meta message.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Info{}, err
	}
	info, err := s.getInfo(ctx, key)
	if err != nil {
		return blob.Info{}, fmt.Errorf("natsblob: stat %s: %w", key, err)
	}
	bi, err := toInfo(info)
	if err != nil {
		return blob.Info{}, fmt.Errorf("natsblob: stat %s: %w", key, err)
	}
	return bi, nil
}

// List returns the live objects whose key starts with prefix, sorted by key. It reads
// every meta message of the bucket.
func (s *Store) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return []blob.Info{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("natsblob: list %q: %w", prefix, err)
	}
	out := []blob.Info{}
	for _, info := range infos {
		if info.Deleted || !strings.HasPrefix(info.Name, prefix) || blob.ValidateKey(info.Name) != nil {
			continue
		}
		bi, err := toInfo(info)
		if err != nil {
			return nil, fmt.Errorf("natsblob: list %q: %w", prefix, err)
		}
		out = append(out, bi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Ping checks the connection and that the bucket answers.
func (s *Store) Ping(ctx context.Context) error {
	if st := s.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("natsblob: ping: connection is %s", st)
	}
	if _, err := s.obs.Status(ctx); err != nil {
		return fmt.Errorf("natsblob: ping bucket %q: %w", s.bucket, err)
	}
	return nil
}

// Close releases nothing: the store holds no subscriptions between calls, and the
// connection belongs to the caller.
func (s *Store) Close() error { return nil }

const headerContentType = "Content-Type"

// getInfo reads key's meta. Any replica of the stream may answer; when one says the key
// is missing, the stream's leader is asked too, so that an object just written by
// another client (whose write the replica may not have applied yet) is found. When the
// leader does not answer, the replica's word stands.
func (s *Store) getInfo(ctx context.Context, key string) (*jetstream.ObjectInfo, error) {
	info, err := s.obs.GetInfo(ctx, key)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		info, err = s.leaderInfo(ctx, key)
	}
	if err != nil {
		return nil, mapNotFound(err)
	}
	if info.Opts != nil && info.Opts.Link != nil {
		return nil, fmt.Errorf("object is a link, which skrip does not create or follow")
	}
	return info, nil
}

// leaderInfo reads key's meta from the stream's leader, as ObjectStore.GetInfo reads it
// from any replica.
func (s *Store) leaderInfo(ctx context.Context, key string) (*jetstream.ObjectInfo, error) {
	rctx, cancel := context.WithTimeout(ctx, min(s.timeout, 2*time.Second))
	defer cancel()
	m, err := s.lastStored(rctx, metaSubject(s.bucket, key))
	if errors.Is(err, jetstream.ErrMsgNotFound) || (err != nil && transient(err) && ctx.Err() == nil) {
		return nil, jetstream.ErrObjectNotFound
	}
	if err != nil {
		return nil, err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(m.Data, &info); err != nil {
		return nil, fmt.Errorf("meta message %d of %s: %w", m.Sequence, key, err)
	}
	if info.Deleted {
		return nil, jetstream.ErrObjectNotFound
	}
	info.ModTime = m.Time
	return &info, nil
}

func mapNotFound(err error) error {
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return blob.ErrNotFound
	}
	return err
}

// toInfo converts nats.go's object info, turning its digest ("SHA-256=<base64url>") into
// the "sha256:<hex>" every backend reports.
func toInfo(info *jetstream.ObjectInfo) (blob.Info, error) {
	if !strings.HasPrefix(info.Digest, digestPrefix) {
		return blob.Info{}, fmt.Errorf("object %s has digest %q, want SHA-256", info.Name, info.Digest)
	}
	sum, err := jetstream.DecodeObjectDigest(info.Digest)
	if err != nil || len(sum) != 32 {
		return blob.Info{}, fmt.Errorf("object %s has a malformed digest %q", info.Name, info.Digest)
	}
	return blob.Info{
		Key:         info.Name,
		Size:        int64(info.Size),
		Checksum:    blob.FormatSHA256(sum),
		ContentType: info.Headers.Get(headerContentType),
		ModTime:     info.ModTime,
	}, nil
}

type limitedReader struct {
	io.Reader
	io.Closer
}
