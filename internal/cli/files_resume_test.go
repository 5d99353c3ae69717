package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUploadStateFile: a state file is written atomically with mode 0600 in a directory of
// the user's alone, is found again by the same server, path and key whatever else
// changed, tells a changed file or changed options from the same upload, and goes when
// removed or once unused for long.
func TestUploadStateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "uploads")
	st := stateStore{dir: dir}
	mtime := time.Date(2026, 11, 26, 10, 0, 0, 123456789, time.UTC)
	s := uploadState{Server: "http://127.0.0.1:8080", Path: "/data/big.bin", Key: "files/big.bin", TTL: "7d",
		Size: 200 << 20, ModTime: mtime, UploadURL: "http://127.0.0.1:8080/api/v1/uploads/up_1"}

	if _, ok := st.load(s); ok {
		t.Fatal("a state file before any was saved")
	}
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}
	for p, mode := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, st.name(s): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != mode {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode(), err, mode)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files after one save; a temp file was left", len(entries))
	}
	kept, ok := st.load(s)
	if !ok || kept.UploadURL != s.UploadURL || !kept.sameUpload(s) {
		t.Fatalf("load: %+v %v", kept, ok)
	}

	// The same file name for the same server, path and key; another for any of them.
	changed := s
	changed.Size, changed.ModTime, changed.TTL, changed.UploadURL = 1, time.Now(), "", ""
	if st.name(changed) != st.name(s) {
		t.Error("a changed file has another state file: the old one would be left behind")
	}
	for _, other := range []func(*uploadState){
		func(o *uploadState) { o.Server = "http://other:8080" },
		func(o *uploadState) { o.Path = "/data/other.bin" },
		func(o *uploadState) { o.Key = "" },
	} {
		o := s
		other(&o)
		if st.name(o) == st.name(s) {
			t.Errorf("%+v shares the state file of %+v", o, s)
		}
	}

	// What makes the kept upload another one.
	tests := []struct {
		name   string
		change func(*uploadState)
		same   bool
	}{
		{"unchanged", func(*uploadState) {}, true},
		{"another upload URL is the same upload", func(o *uploadState) { o.UploadURL = "" }, true},
		{"the same mtime in another zone", func(o *uploadState) { o.ModTime = o.ModTime.In(time.FixedZone("x", 3600)) }, true},
		{"another size", func(o *uploadState) { o.Size++ }, false},
		{"another mtime", func(o *uploadState) { o.ModTime = o.ModTime.Add(time.Nanosecond) }, false},
		{"another ttl", func(o *uploadState) { o.TTL = "1h" }, false},
		{"another content type", func(o *uploadState) { o.ContentType = "text/csv" }, false},
	}
	for _, tc := range tests {
		o := s
		tc.change(&o)
		// Through JSON, as a later run reads it.
		b, _ := json.Marshal(s)
		var read uploadState
		json.Unmarshal(b, &read)
		if got := read.sameUpload(o); got != tc.same {
			t.Errorf("%s: sameUpload = %v", tc.name, got)
		}
	}

	// A state file that is not one is ignored, and then replaced.
	os.WriteFile(st.name(s), []byte("{not json"), 0o600)
	if _, ok := st.load(s); ok {
		t.Error("a damaged state file was taken")
	}
	if err := st.save(s); err != nil {
		t.Fatal(err)
	}

	// Pruning: a state file unused for long, and an old temp file of a killed run, go;
	// the rest stay.
	old := s
	old.Path = "/data/old.bin"
	st.save(old)
	os.Chtimes(st.name(old), time.Now().Add(-staleState-time.Hour), time.Now().Add(-staleState-time.Hour))
	oldTmp, freshTmp := filepath.Join(dir, ".state-old"), filepath.Join(dir, ".state-fresh")
	os.WriteFile(oldTmp, nil, 0o600)
	os.WriteFile(freshTmp, nil, 0o600)
	os.Chtimes(oldTmp, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour))
	st.prune(time.Now())
	for p, want := range map[string]bool{st.name(s): true, st.name(old): false, oldTmp: false, freshTmp: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("after pruning, %s exists: %v; want %v", p, err == nil, want)
		}
	}

	if err := st.remove(s); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.load(s); ok {
		t.Error("the state file is there after remove")
	}
	if err := st.remove(s); err != nil {
		t.Errorf("removing a state file that is gone: %v", err)
	}
}

// TestUploadStateDir: SKRIP_CACHE_DIR chooses where state files go; without it they go
// under the user's cache directory.
func TestUploadStateDir(t *testing.T) {
	e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string {
		if k == "SKRIP_CACHE_DIR" {
			return "/tmp/skrip-cache"
		}
		return ""
	}}
	if d, err := e.uploadStateDir(); err != nil || d != "/tmp/skrip-cache/uploads" {
		t.Errorf("with SKRIP_CACHE_DIR: %q %v", d, err)
	}
	e.getenv = func(string) string { return "" }
	d, err := e.uploadStateDir()
	cache, cerr := os.UserCacheDir()
	if cerr != nil {
		if err == nil || !strings.Contains(err.Error(), "SKRIP_CACHE_DIR") {
			t.Errorf("no cache dir: %q %v", d, err)
		}
		return
	}
	if err != nil || d != filepath.Join(cache, "skrip", "uploads") {
		t.Errorf("default: %q %v; want under %s", d, err, cache)
	}
}
