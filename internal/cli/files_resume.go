package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/skrip-dev/skrip/internal/client"
)

// Large files go up over the resumable upload route (tus). `skrip files upload` keeps a
// small state file per upload under the user's cache directory, so that running the same
// command again after a dropped connection, a Ctrl-C or a kill goes on from the server's
// offset instead of from the first byte.

// defaultResumableThreshold is the size from which `files upload` uploads resumably.
const defaultResumableThreshold = 8 << 20

// uploadState is what a state file holds: the upload's URL, and what it was made of, so
// a changed file or other options start over.
type uploadState struct {
	Server      string    `json:"server"`
	Path        string    `json:"path"`
	Key         string    `json:"key,omitempty"`
	TTL         string    `json:"ttl,omitempty"`
	ContentType string    `json:"content_type,omitempty"`
	Size        int64     `json:"size"`
	ModTime     time.Time `json:"mtime"`
	UploadURL   string    `json:"upload_url"`
}

// sameUpload reports whether s was kept for the upload of o: the same file, unchanged,
// to the same server with the same options.
func (s uploadState) sameUpload(o uploadState) bool {
	return s.Server == o.Server && s.Path == o.Path && s.Key == o.Key && s.TTL == o.TTL &&
		s.ContentType == o.ContentType && s.Size == o.Size && s.ModTime.Equal(o.ModTime)
}

// stateStore is the directory of state files.
type stateStore struct {
	dir string
}

// uploadStateDir is where state files go: $SKRIP_CACHE_DIR/uploads when that is set,
// else skrip/uploads in the user's cache directory (os.UserCacheDir: $XDG_CACHE_HOME or
// ~/.cache on Linux, ~/Library/Caches on macOS, %LocalAppData% on Windows).
func (e *env) uploadStateDir() (string, error) {
	if d := e.getenv("SKRIP_CACHE_DIR"); d != "" {
		return filepath.Join(d, "uploads"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory to keep the upload's state in (%v); set SKRIP_CACHE_DIR, or pass --no-resume", err)
	}
	return filepath.Join(d, "skrip", "uploads"), nil
}

// name is the state file of an upload: one per server, local file, key and owner, so a
// run of the same command finds it whatever else changed, and a changed file replaces it.
func (st stateStore) name(s uploadState) string {
	h := sha256.New()
	for _, part := range []string{s.Server, s.Path, s.Key} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return filepath.Join(st.dir, hex.EncodeToString(h.Sum(nil))[:32]+".json")
}

// load reads the state kept for s's upload, if any. A state file that cannot be read
// as one is ignored: the upload then starts over.
func (st stateStore) load(s uploadState) (uploadState, bool) {
	b, err := os.ReadFile(st.name(s))
	if err != nil {
		return uploadState{}, false
	}
	var kept uploadState
	if json.Unmarshal(b, &kept) != nil || kept.UploadURL == "" {
		return uploadState{}, false
	}
	return kept, true
}

// save writes s's state file atomically (a temp file renamed over it), readable by the
// user alone: the upload URL is enough to send bytes to it with the user's token.
func (st stateStore) save(s uploadState) error {
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(st.dir, ".state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing by that name
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), st.name(s))
}

// remove deletes s's state file.
func (st stateStore) remove(s uploadState) error {
	err := os.Remove(st.name(s))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// staleState is how long a state file may go unused before a resumable upload removes
// it. Its upload is gone from the server long before (SKRIP_FILES_UPLOAD_TTL after its
// last bytes, 24h by default), but the client does not know when the last bytes arrived.
const staleState = 30 * 24 * time.Hour

// prune removes state files unused for staleState, of uploads abandoned long ago, and
// temp files a killed run left. It is tidying: errors are ignored.
func (st stateStore) prune(now time.Time) {
	entries, err := os.ReadDir(st.dir)
	if err != nil {
		return
	}
	for _, de := range entries {
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		age := now.Sub(info.ModTime())
		if (filepath.Ext(de.Name()) == ".json" && age > staleState) || (filepath.Ext(de.Name()) != ".json" && age > time.Hour) {
			os.Remove(filepath.Join(st.dir, de.Name()))
		}
	}
}

// uploadResumable uploads the open file f (named path, of info) over the resumable route,
// going on with the upload a state file names when there is one for this very file, and
// keeping that state until the upload completes. Without resume it keeps no state.
func (e *env) uploadResumable(ctx context.Context, c *client.Client, f *os.File, path string, info os.FileInfo, opts client.UploadOptions) (client.FileInfo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return client.FileInfo{}, err
	}
	dir, err := e.uploadStateDir()
	if err != nil {
		return client.FileInfo{}, err
	}
	store := stateStore{dir: dir}
	store.prune(time.Now())
	want := uploadState{Server: c.URL(""), Path: abs, Key: opts.Key, TTL: opts.TTL, ContentType: opts.ContentType,
		Size: info.Size(), ModTime: info.ModTime()}
	ropts := client.ResumableOptions{UploadOptions: opts, Name: filepath.Base(path)}
	if kept, ok := store.load(want); ok {
		if kept.sameUpload(want) {
			ropts.URL = kept.UploadURL
		} else {
			// The file or the options changed: the bytes on the server are of
			// something else. Free them, and start over.
			fmt.Fprintf(e.stderr, "%s changed since its interrupted upload; starting over\n", path)
			c.TerminateUpload(ctx, kept.UploadURL)
		}
	}
	ropts.Created = func(url string, _ time.Time) error {
		if ropts.URL != "" {
			fmt.Fprintf(e.stderr, "The interrupted upload of %s is gone from the server (expired or deleted); starting over\n", path)
		}
		s := want
		s.UploadURL = url
		return store.save(s)
	}
	bar := e.progress(info.Size(), "uploading")
	ropts.Resuming = func(offset int64) {
		fmt.Fprintf(e.stderr, "Resuming the upload of %s at %s of %s\n", path, size(offset), size(info.Size()))
	}
	if bar != nil {
		defer bar.Finish()
		ropts.Progress = func(offset int64, body io.Reader) io.Reader {
			bar.Set64(offset)
			r := progressbar.NewReader(body, bar)
			return &r
		}
	}
	fi, err := c.UploadResumable(ctx, f, info.Size(), ropts)
	var ie *client.InterruptedError
	switch {
	case errors.As(err, &ie):
		return fi, fmt.Errorf("%w; run the same command again to resume from there", err)
	case err != nil:
		return fi, err
	}
	if err := store.remove(want); err != nil {
		fmt.Fprintf(e.stderr, "the upload is complete, but its state file could not be removed: %v\n", err)
	}
	return fi, nil
}
