// Package blobtest is the conformance suite every blob.Store backend must pass, plus a
// shared Put/Get benchmark. Backends call Run from their own tests with a factory that
// returns a fresh, empty store.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/skrip-dev/skrip/internal/blob"
)

// Options tune the suite for one backend.
type Options struct {
	// LeftoverCheck, when set, runs at the end of every subtest, before the store is
	// closed. It fails t when the backend left temporary or unreferenced data behind.
	LeftoverCheck func(t *testing.T, s blob.Store)
}

// Run runs the conformance suite. newStore must return a fresh, empty store for each
// call; the suite closes it at the end of the subtest.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store, opts Options) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s blob.Store)
	}{
		{"PutGetSizes", testPutGetSizes},
		{"KnownChecksum", testKnownChecksum},
		{"Overwrite", testOverwrite},
		{"Missing", testMissing},
		{"InvalidKey", testInvalidKey},
		{"ListPrefix", testListPrefix},
		{"DeleteThenList", testDeleteThenList},
		{"GetRange", testGetRange},
		{"FailingReader", testFailingReader},
		{"CancelMidStream", testCancelMidStream},
		{"ConcurrentPuts", testConcurrentPuts},
		{"ConcurrentOverwrite", testConcurrentOverwrite},
		{"Ping", testPing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			c.fn(t, s)
			if opts.LeftoverCheck != nil && !t.Failed() {
				opts.LeftoverCheck(t, s)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func testPutGetSizes(t *testing.T, s blob.Store) {
	ctx := context.Background()
	cases := []struct {
		name        string
		key         string
		size        int
		contentType string
	}{
		{"empty", "files/empty", 0, ""},
		{"one byte", "files/one", 1, "text/plain"},
		{"5 MiB", "runs/r1/big.bin", 5 << 20, "application/octet-stream"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := randomBytes(t, c.size)
			info, err := s.Put(ctx, c.key, bytes.NewReader(data), blob.PutOptions{ContentType: c.contentType})
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			checkInfo(t, "Put", info, c.key, data, c.contentType)

			stat, err := s.Stat(ctx, c.key)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			checkInfo(t, "Stat", stat, c.key, data, c.contentType)

			got, ginfo := getAll(t, s, c.key, 0, -1)
			checkInfo(t, "Get", ginfo, c.key, data, c.contentType)
			if sha256.Sum256(got) != sha256.Sum256(data) || !bytes.Equal(got, data) {
				t.Fatalf("Get returned %d bytes that differ from the %d put", len(got), len(data))
			}
		})
	}
}

func testKnownChecksum(t *testing.T, s blob.Store) {
	info, err := s.Put(context.Background(), "files/hello.txt", strings.NewReader("hello"), blob.PutOptions{})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	const want = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	if info.Checksum != want {
		t.Fatalf("checksum of %q = %q, want %q", "hello", info.Checksum, want)
	}
}

func testOverwrite(t *testing.T, s blob.Store) {
	ctx := context.Background()
	const key = "files/over"
	first := randomBytes(t, 300<<10)
	second := randomBytes(t, 17)
	putBytes(t, s, key, first, "application/x-first")
	info := putBytes(t, s, key, second, "text/x-second")
	checkInfo(t, "Put", info, key, second, "text/x-second")

	stat, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	checkInfo(t, "Stat", stat, key, second, "text/x-second")
	if got, _ := getAll(t, s, key, 0, -1); !bytes.Equal(got, second) {
		t.Fatalf("after overwrite Get returned %d bytes, want the new %d", len(got), len(second))
	}
	list, err := s.List(ctx, "files/")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 1 || list[0].Size != int64(len(second)) {
		t.Fatalf("List after overwrite = %+v, want one entry of %d bytes", list, len(second))
	}
}

func testMissing(t *testing.T, s blob.Store) {
	ctx := context.Background()
	putBytes(t, s, "files/present", []byte("x"), "")
	for _, key := range []string{"files/absent", "files/present/child", "runs/none"} {
		if _, _, err := s.Get(ctx, key, 0, -1); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want ErrNotFound", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat(%q) error = %v, want ErrNotFound", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Delete(%q) error = %v, want ErrNotFound", key, err)
		}
	}
	// Deleting twice: the second answers ErrNotFound.
	if err := s.Delete(ctx, "files/present"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.Delete(ctx, "files/present"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("second Delete error = %v, want ErrNotFound", err)
	}
}

func testInvalidKey(t *testing.T, s blob.Store) {
	ctx := context.Background()
	keys := []string{
		"", "files", "files/", "/files/a", "other/a", "files//a", "files/a/",
		"files/../a", "files/./a", "files/a@b", "files/a b", "files/é",
		"files/" + strings.Repeat("a", blob.MaxKeyBytes),
	}
	for _, key := range keys {
		if _, err := s.Put(ctx, key, strings.NewReader("x"), blob.PutOptions{}); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Put(%q) error = %v, want ErrInvalidKey", key, err)
		}
		if _, _, err := s.Get(ctx, key, 0, -1); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Get(%q) error = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Stat(%q) error = %v, want ErrInvalidKey", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Delete(%q) error = %v, want ErrInvalidKey", key, err)
		}
	}
	list, err := s.List(ctx, "")
	if err != nil || len(list) != 0 {
		t.Fatalf("List after invalid puts = %v, %v; want nothing stored", list, err)
	}
}

func testListPrefix(t *testing.T, s blob.Store) {
	ctx := context.Background()
	keys := []string{
		"files/a", "files/a/b", "files/a/b/c", "files/ab", "files/b.txt",
		"runs/r1/out/result.json", "sessions/s1/state.json",
	}
	sizes := map[string]int{}
	for i, key := range keys {
		sizes[key] = i + 1
		putBytes(t, s, key, bytes.Repeat([]byte{'x'}, i+1), "")
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", keys},
		{"files/", []string{"files/a", "files/a/b", "files/a/b/c", "files/ab", "files/b.txt"}},
		{"files/a", []string{"files/a", "files/a/b", "files/a/b/c", "files/ab"}},
		{"files/a/", []string{"files/a/b", "files/a/b/c"}},
		{"files/a/b", []string{"files/a/b", "files/a/b/c"}},
		{"files/a/b/c", []string{"files/a/b/c"}},
		{"files/b", []string{"files/b.txt"}},
		{"fil", []string{"files/a", "files/a/b", "files/a/b/c", "files/ab", "files/b.txt"}},
		{"runs/", []string{"runs/r1/out/result.json"}},
		{"runs/r1/out/", []string{"runs/r1/out/result.json"}},
		{"sessions", []string{"sessions/s1/state.json"}},
		{"files/zz/", nil},
		{"files/a/b/c/", nil},
		{"nothing", nil},
		{"../", nil},
		{"files/../files/", nil},
		{"files//a", nil},
		{"/files/", nil},
	}
	for _, c := range cases {
		list, err := s.List(ctx, c.prefix)
		if err != nil {
			t.Errorf("List(%q): %v", c.prefix, err)
			continue
		}
		if got := infoKeys(list); !equalStrings(got, c.want) {
			t.Errorf("List(%q) = %q, want %q", c.prefix, got, c.want)
		}
		for _, info := range list {
			data := bytes.Repeat([]byte{'x'}, sizes[info.Key])
			checkInfo(t, "List", info, info.Key, data, "")
		}
	}
}

func testDeleteThenList(t *testing.T, s blob.Store) {
	ctx := context.Background()
	for _, key := range []string{"files/a", "files/a/b", "files/a/b/c", "files/ab"} {
		putBytes(t, s, key, []byte(key), "")
	}
	steps := []struct {
		del  string
		want []string
	}{
		{"files/a", []string{"files/a/b", "files/a/b/c", "files/ab"}},
		{"files/a/b/c", []string{"files/a/b", "files/ab"}},
		{"files/a/b", []string{"files/ab"}},
		{"files/ab", nil},
	}
	for _, st := range steps {
		if err := s.Delete(ctx, st.del); err != nil {
			t.Fatalf("Delete(%q): %v", st.del, err)
		}
		if _, err := s.Stat(ctx, st.del); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Stat(%q) after Delete = %v, want ErrNotFound", st.del, err)
		}
		if _, _, err := s.Get(ctx, st.del, 0, -1); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get(%q) after Delete = %v, want ErrNotFound", st.del, err)
		}
		list, err := s.List(ctx, "files/")
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if got := infoKeys(list); !equalStrings(got, st.want) {
			t.Errorf("after deleting %q List = %q, want %q", st.del, got, st.want)
		}
	}
	// A deleted key can be written again, also where a directory of keys used to be.
	putBytes(t, s, "files/a/b", []byte("again"), "")
	if got, _ := getAll(t, s, "files/a/b", 0, -1); string(got) != "again" {
		t.Fatalf("Get after re-put = %q, want %q", got, "again")
	}
}

func testGetRange(t *testing.T, s blob.Store) {
	// Larger than a few backend chunks (natsblob's are 256 KiB, nats.go's 128 KiB) so
	// ranges cross them.
	const size = 300<<10 + 7
	data := randomBytes(t, size)
	putBytes(t, s, "files/range", data, "")
	cases := []struct {
		off, n int64
		want   []byte
	}{
		{0, -1, data},
		{0, 0, nil},
		{0, 1, data[:1]},
		{10, 20, data[10:30]},
		{128<<10 - 3, 6, data[128<<10-3 : 128<<10+3]},
		{256<<10 - 3, 6, data[256<<10-3 : 256<<10+3]},
		{200 << 10, -1, data[200<<10:]},
		{100, size, data[100:]},
		{size - 1, -1, data[size-1:]},
		{size - 1, 10, data[size-1:]},
		{size, -1, nil},
		{size, 5, nil},
		{size + 100, 5, nil},
	}
	for _, c := range cases {
		got, info := getAll(t, s, "files/range", c.off, c.n)
		if !bytes.Equal(got, c.want) {
			t.Errorf("Get(off=%d, n=%d) returned %d bytes, want %d", c.off, c.n, len(got), len(c.want))
		}
		if info.Size != size {
			t.Errorf("Get(off=%d, n=%d) Info.Size = %d, want the whole object's %d", c.off, c.n, info.Size, size)
		}
	}
	// An empty object answers any range with nothing.
	putBytes(t, s, "files/empty", nil, "")
	if got, _ := getAll(t, s, "files/empty", 0, 10); len(got) != 0 {
		t.Errorf("Get of empty object returned %d bytes", len(got))
	}
}

func testFailingReader(t *testing.T, s blob.Store) {
	ctx := context.Background()
	old := randomBytes(t, 200<<10)
	putBytes(t, s, "files/kept", old, "text/old")
	for _, key := range []string{"files/kept", "files/fresh"} {
		r := &failingReader{data: randomBytes(t, 3<<20), failAt: 1<<20 + 12345}
		_, err := s.Put(ctx, key, r, blob.PutOptions{ContentType: "text/new"})
		if !errors.Is(err, errReader) {
			t.Fatalf("Put(%q) with failing reader error = %v, want it to wrap the reader's error", key, err)
		}
	}
	stat, err := s.Stat(ctx, "files/kept")
	if err != nil {
		t.Fatalf("Stat of the previous object: %v", err)
	}
	checkInfo(t, "Stat", stat, "files/kept", old, "text/old")
	if got, _ := getAll(t, s, "files/kept", 0, -1); !bytes.Equal(got, old) {
		t.Fatalf("previous object changed after a failed overwrite")
	}
	if _, err := s.Stat(ctx, "files/fresh"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat of a key whose only Put failed = %v, want ErrNotFound", err)
	}
	checkKeys(t, s, "", []string{"files/kept"})
}

func testCancelMidStream(t *testing.T, s blob.Store) {
	old := randomBytes(t, 1000)
	putBytes(t, s, "files/kept", old, "")
	for _, key := range []string{"files/kept", "files/fresh"} {
		ctx, cancel := context.WithCancel(context.Background())
		r := &cancellingReader{data: randomBytes(t, 4<<20), cancelAt: 1 << 20, cancel: cancel}
		_, err := s.Put(ctx, key, r, blob.PutOptions{})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Put(%q) cancelled mid-stream error = %v, want context.Canceled", key, err)
		}
	}
	if got, _ := getAll(t, s, "files/kept", 0, -1); !bytes.Equal(got, old) {
		t.Fatalf("previous object changed after a cancelled overwrite")
	}
	if _, err := s.Stat(context.Background(), "files/fresh"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat of a key whose only Put was cancelled = %v, want ErrNotFound", err)
	}
	checkKeys(t, s, "", []string{"files/kept"})
}

func testConcurrentPuts(t *testing.T, s blob.Store) {
	const workers = 16
	ctx := context.Background()
	data := make([][]byte, workers)
	for i := range data {
		data[i] = randomBytes(t, (i*37)<<10+i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("sessions/s%d/dir/file-%02d", i%3, i)
			if _, err := s.Put(ctx, key, bytes.NewReader(data[i]), blob.PutOptions{}); err != nil {
				errs <- fmt.Errorf("Put(%q): %w", key, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var want []string
	for i := range workers {
		key := fmt.Sprintf("sessions/s%d/dir/file-%02d", i%3, i)
		got, info := getAll(t, s, key, 0, -1)
		if !bytes.Equal(got, data[i]) {
			t.Errorf("Get(%q) returned different bytes", key)
		}
		checkInfo(t, "Get", info, key, data[i], "")
		want = append(want, key)
	}
	list, err := s.List(ctx, "sessions/")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != len(want) {
		t.Fatalf("List found %d keys, want %d", len(list), len(want))
	}
}

// testConcurrentOverwrite races writers of one key against readers. A read that races
// an overwrite may fail (a backend may not keep replaced bytes), but a read that succeeds
// returns exactly the version its Info describes, and the last version stands at the end.
func testConcurrentOverwrite(t *testing.T, s blob.Store) {
	const (
		key     = "files/hot"
		writers = 4
		rounds  = 4
	)
	ctx := context.Background()
	versions := map[string][]byte{}
	contents := make([][][]byte, writers)
	for w := range contents {
		for r := range rounds {
			data := randomBytes(t, 200<<10+w*1000+r)
			sum := sha256.Sum256(data)
			versions[blob.FormatSHA256(sum[:])] = data
			contents[w] = append(contents[w], data)
		}
	}
	var writersWG, readersWG sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, writers*rounds+64)
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			for _, data := range contents[w] {
				if _, err := s.Put(ctx, key, bytes.NewReader(data), blob.PutOptions{}); err != nil {
					errs <- fmt.Errorf("Put: %w", err)
				}
			}
		}()
	}
	for range 2 {
		readersWG.Add(1)
		go func() {
			defer readersWG.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				rc, info, err := s.Get(ctx, key, 0, -1)
				if errors.Is(err, blob.ErrNotFound) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("Get: %w", err)
					return
				}
				got, err := io.ReadAll(rc)
				_ = rc.Close()
				if err != nil {
					continue
				}
				sum := sha256.Sum256(got)
				if blob.FormatSHA256(sum[:]) != info.Checksum {
					errs <- fmt.Errorf("a read returned %d bytes that do not match its Info (%d bytes, %s)", len(got), info.Size, info.Checksum)
					return
				}
			}
		}()
	}
	writersWG.Wait()
	close(done)
	readersWG.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, info := getAll(t, s, key, 0, -1)
	want, ok := versions[info.Checksum]
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("after the race %s holds %d bytes that no writer wrote", key, len(got))
	}
	checkKeys(t, s, "files/", []string{key})
}

func testPing(t *testing.T, s blob.Store) {
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}
