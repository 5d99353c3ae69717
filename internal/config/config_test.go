package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	l, err := Load(flags(t), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.Addr != "127.0.0.1:8080" || c.DataDir != "./skrip-data" || c.DatabaseURL != "" || c.Blob != "fs" ||
		c.FilesMaxFileBytes != 100<<20 || c.FilesUserQuotaBytes != 1<<30 || c.FilesMaxTotalBytes != 10<<30 ||
		c.CleanupInterval != time.Hour || c.BwrapUID != 65534 || c.BwrapGID != 65534 {
		t.Fatalf("defaults = %+v", c)
	}
	for _, v := range l.Values {
		if v.Source != FromDefault {
			t.Fatalf("%s from %s, want default", v.Name, v.Source)
		}
	}
}

func TestPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "skrip.yaml")
	os.WriteFile(file, []byte("addr: 0.0.0.0:1\ndata_dir: /from/file\nblob: nats\ncleanup-interval: 7d\nfiles-max-file-bytes: 5MiB\n"), 0o600)
	l, err := Load(flags(t, "--config", file, "--addr", "0.0.0.0:3"),
		envOf(map[string]string{"SKRIP_ADDR": "0.0.0.0:2", "SKRIP_DATA_DIR": "/from/env"}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		value string
		src   Source
	}{
		"addr":                 {"0.0.0.0:3", FromFlag},
		"data-dir":             {"/from/env", FromEnv},
		"blob":                 {"nats", FromFile},
		"cleanup-interval":     {"7d", FromFile},
		"files-max-file-bytes": {"5MiB", FromFile},
		"log-level":            {"info", FromDefault},
	}
	for _, v := range l.Values {
		if w, ok := want[v.Name]; ok && (v.Value != w.value || v.Source != w.src) {
			t.Errorf("%s = %q from %s, want %q from %s", v.Name, v.Value, v.Source, w.value, w.src)
		}
	}
	if l.Addr != "0.0.0.0:3" || l.DataDir != "/from/env" || l.Blob != "nats" || l.CleanupInterval != 7*24*time.Hour || l.FilesMaxFileBytes != 5<<20 {
		t.Fatalf("config = %+v", l.Config)
	}
}

func TestConfigFileFromEnv(t *testing.T) {
	file := filepath.Join(t.TempDir(), "skrip.yaml")
	os.WriteFile(file, []byte("log-level: debug\n"), 0o600)
	l, err := Load(flags(t), envOf(map[string]string{"SKRIP_CONFIG": file}))
	if err != nil || l.LogLevel != "debug" {
		t.Fatalf("LogLevel = %q, %v", l.LogLevel, err)
	}
}

func TestErrorsNameTheSetting(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"bad blob", []string{"--blob", "s3"}, nil, []string{"blob", "SKRIP_BLOB", `"s3"`, "fs, nats", "flag"}},
		{"bad bytes", nil, map[string]string{"SKRIP_FILES_MAX_FILE_BYTES": "lots"}, []string{"files-max-file-bytes", `"lots"`, "env"}},
		{"bad duration", nil, map[string]string{"SKRIP_CLEANUP_INTERVAL": "soon"}, []string{"cleanup-interval", `"soon"`, "7d"}},
		{"unknown key", []string{"--config", write("a.yaml", "adress: x\n")}, nil, []string{"unknown setting", `"adress"`}},
		{"bad yaml", []string{"--config", write("b.yaml", "addr: [\n")}, nil, []string{"not valid YAML"}},
		{"missing file", []string{"--config", filepath.Join(dir, "none.yaml")}, nil, []string{"reading config file"}},
		{"nested value", []string{"--config", write("c.yaml", "addr: {a: 1}\n")}, nil, []string{"single value"}},
		{"root as the sandbox uid", nil, map[string]string{"SKRIP_BWRAP_UID": "0"}, []string{"bwrap-uid", "SKRIP_BWRAP_UID", `"0"`, "root"}},
		{"root as the sandbox gid", []string{"--bwrap-gid", "0"}, nil, []string{"bwrap-gid", `"0"`, "root", "flag"}},
		{"a sandbox uid that is no id", nil, map[string]string{"SKRIP_BWRAP_UID": "-5"}, []string{"bwrap-uid", `"-5"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(flags(t, tc.args...), envOf(tc.env))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseBytesAndDuration(t *testing.T) {
	bytes := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"104857600", 100 << 20, true}, {"100MiB", 100 << 20, true}, {"1GB", 1e9, true},
		{"20 MB", 20e6, true}, {"7B", 7, true}, {"-1", 0, false}, {"1.5GB", 0, false}, {"MB", 0, false},
		{"99999999999TiB", 0, false},
	}
	for _, b := range bytes {
		got, err := ParseBytes(b.in)
		if (err == nil) != b.ok || got != b.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d ok=%v", b.in, got, err, b.want, b.ok)
		}
	}
	durs := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90m", 90 * time.Minute, true}, {"7d", 7 * 24 * time.Hour, true}, {"0d", 0, true},
		{"1h30m", 90 * time.Minute, true}, {"-1h", 0, false}, {"xd", 0, false}, {"", 0, false},
	}
	for _, d := range durs {
		got, err := ParseDuration(d.in)
		if (err == nil) != d.ok || got != d.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", d.in, got, err, d.want, d.ok)
		}
	}
}

func TestDisplayHidesSecrets(t *testing.T) {
	env := map[string]string{"SKRIP_NATS_URL": "nats://u:hunter2@h:4222,nats://tok@h2:4222", "SKRIP_NATS_PASSWORD": "hunter2", "SKRIP_NATS_USER": "u"}
	loaded, err := Load(pflag.NewFlagSet("t", pflag.ContinueOnError), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range loaded.Values {
		if strings.Contains(v.Display(), "hunter2") || (v.Name == "nats-url" && strings.Contains(v.Display(), "tok@")) {
			t.Errorf("%s is shown as %q", v.Env(), v.Display())
		}
		if v.Name == "nats-user" && v.Display() != "u" {
			t.Errorf("SKRIP_NATS_USER shown as %q", v.Display())
		}
	}
}

// TestRenamedSettingKeepsItsOldName: editor-run-timeout was sandbox-run-timeout; the old
// flag, env var and file key still set it, and the new name wins over the old.
func TestRenamedSettingKeepsItsOldName(t *testing.T) {
	file := filepath.Join(t.TempDir(), "skrip.yaml")
	if err := os.WriteFile(file, []byte("sandbox-run-timeout: 7s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want time.Duration
	}{
		{"default", nil, nil, 60 * time.Second},
		{"old env", nil, map[string]string{"SKRIP_SANDBOX_RUN_TIMEOUT": "5s"}, 5 * time.Second},
		{"new env wins", nil, map[string]string{"SKRIP_SANDBOX_RUN_TIMEOUT": "5s", "SKRIP_EDITOR_RUN_TIMEOUT": "9s"}, 9 * time.Second},
		{"old flag", []string{"--sandbox-run-timeout=3s"}, nil, 3 * time.Second},
		{"old file key", []string{"--config=" + file}, nil, 7 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(flags(t, tc.args...), envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if l.EditorRunTimeout != tc.want {
				t.Fatalf("EditorRunTimeout = %s, want %s", l.EditorRunTimeout, tc.want)
			}
		})
	}
}

// TestBadValueNamesWhatTheUserSet: an error about a value names the variable, flag or
// file key the user set, an alias included, not only the setting's current name.
func TestBadValueNamesWhatTheUserSet(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"SKRIP_SANDBOX_RUN_TIMEOUT": "abc"}, "from env SKRIP_SANDBOX_RUN_TIMEOUT"},
		{nil, map[string]string{"SKRIP_EDITOR_RUN_TIMEOUT": "abc"}, "(SKRIP_EDITOR_RUN_TIMEOUT, from env)"},
		{[]string{"--sandbox-run-timeout=abc"}, nil, "from flag --sandbox-run-timeout"},
	} {
		_, err := Load(flags(t, tc.args...), envOf(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%v, %v) = %v, want an error naming %q", tc.args, tc.env, err, tc.want)
		}
	}
}
