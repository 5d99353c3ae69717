package client_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// Upload sends a body of known size (a file from its offset, a bytes.Reader) with a
// Content-Length and any other body chunked; every way stores exactly the bytes given.
func TestUploadSizedAndStreamed(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	data := make([]byte, 3<<20+17)
	rand.Read(data)
	path := filepath.Join(t.TempDir(), "src.bin")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fromOffset, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fromOffset.Close()
	if _, err := fromOffset.Seek(1000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(func() error { _, err := pw.Write(data); return err }()) }()
	for _, c := range []struct {
		name string
		body io.Reader
		want []byte
	}{
		{"file-at-offset", fromOffset, data[1000:]},
		{"bytes-reader", bytes.NewReader(data), data},
		{"empty", strings.NewReader(""), nil},
		{"pipe", pr, data},
	} {
		key := "files/upload-" + c.name
		fi, err := env.Admin.Upload(ctx, c.name+".bin", c.body, client.UploadOptions{Key: key, TTL: "1h"})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if fi.SizeBytes != int64(len(c.want)) || fi.Name != c.name+".bin" {
			t.Errorf("%s: stored %d bytes named %q, want %d named %q", c.name, fi.SizeBytes, fi.Name, len(c.want), c.name+".bin")
		}
		var got bytes.Buffer
		if _, err := env.Admin.Download(ctx, key, func(client.FileInfo) (io.Writer, error) { return &got, nil }); err != nil {
			t.Fatalf("%s: download: %v", c.name, err)
		}
		if !bytes.Equal(got.Bytes(), c.want) {
			t.Errorf("%s: downloaded %d bytes that differ from the %d uploaded", c.name, got.Len(), len(c.want))
		}
	}
}
