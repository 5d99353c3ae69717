package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
		c.CleanupInterval != time.Hour || c.BwrapUID != 65534 || c.BwrapGID != 65534 ||
		c.RunnerConcurrency != runtime.NumCPU() || c.NATSWorkBucket != "skrip-work" || c.WorkerID != "" ||
		c.RunAckWait != 30*time.Second || c.WorkerCacheBytes != 2<<30 ||
		c.ReportsPerHour != 20 || c.UploadLinksPerUser != 100 || c.UploadsPerUser != 100 || c.TokensPerUser != 100 ||
		c.LintsPerUser != 2 || c.CLICodeFailures != 5 {
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
		{"concurrency that is no number", nil, map[string]string{"SKRIP_RUNNER_CONCURRENCY": "many"}, []string{"runner-concurrency", `"many"`, "auto"}},
		{"negative concurrency", []string{"--runner-concurrency", "-1"}, nil, []string{"runner-concurrency", `"-1"`, "flag"}},
		{"an ack wait under a second", nil, map[string]string{"SKRIP_RUN_ACK_WAIT": "500ms"}, []string{"run-ack-wait", "SKRIP_RUN_ACK_WAIT", `"500ms"`, "1s"}},
		{"an ack wait that is no duration", nil, map[string]string{"SKRIP_RUN_ACK_WAIT": "soon"}, []string{"run-ack-wait", `"soon"`}},
		{"a cache size that is no size", nil, map[string]string{"SKRIP_WORKER_CACHE_BYTES": "big"}, []string{"worker-cache-bytes", "SKRIP_WORKER_CACHE_BYTES", `"big"`}},
		{"no reports an hour", nil, map[string]string{"SKRIP_REPORTS_PER_HOUR": "0"}, []string{"reports-per-hour", "SKRIP_REPORTS_PER_HOUR", `"0"`, "from 1 to 100000"}},
		{"upload links that are no number", nil, map[string]string{"SKRIP_UPLOAD_LINKS_PER_USER": "many"}, []string{"upload-links-per-user", `"many"`, "whole number"}},
		{"negative uploads per user", []string{"--uploads-per-user", "-1"}, nil, []string{"uploads-per-user", `"-1"`, "flag"}},
		{"tokens per user past the most", nil, map[string]string{"SKRIP_TOKENS_PER_USER": "100001"}, []string{"tokens-per-user", `"100001"`, "from 1 to 100000"}},
		{"no lints per user", nil, map[string]string{"SKRIP_LINTS_PER_USER": "0"}, []string{"lints-per-user", "SKRIP_LINTS_PER_USER", `"0"`, "from 1 to 1000"}},
		{"CLI code failures that are no number", nil, map[string]string{"SKRIP_CLI_CODE_FAILURES_PER_USER": "1.5"}, []string{"cli-code-failures-per-user", `"1.5"`}},
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

// clusterEnv are the settings of cluster mode: an external NATS holding the files, and
// PostgreSQL.
var clusterEnv = map[string]string{"SKRIP_NATS_URL": "nats://n1:4222", "SKRIP_BLOB": "nats", "SKRIP_DATABASE_URL": "postgres://skrip@db/skrip"}

// with returns env with the settings of more added or, where a value is empty, removed.
func with(env map[string]string, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// TestRunnerConcurrency: auto (the default) is the number of CPUs; 0 means no local
// workers, which `skrip serve` accepts only in cluster mode and otherwise refuses with an
// error that names the setting and says why.
func TestRunnerConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    int
		refused bool
	}{
		{"default", nil, runtime.NumCPU(), false},
		{"auto", map[string]string{"SKRIP_RUNNER_CONCURRENCY": "auto"}, runtime.NumCPU(), false},
		{"a number", map[string]string{"SKRIP_RUNNER_CONCURRENCY": "3"}, 3, false},
		{"0 on one server", map[string]string{"SKRIP_RUNNER_CONCURRENCY": "0"}, 0, true},
		{"0 with the embedded NATS", map[string]string{"SKRIP_RUNNER_CONCURRENCY": "0", "SKRIP_BLOB": "nats", "SKRIP_DATABASE_URL": "postgres://db/skrip"}, 0, true},
		{"0 with files on disk", with(clusterEnv, map[string]string{"SKRIP_RUNNER_CONCURRENCY": "0", "SKRIP_BLOB": "fs"}), 0, true},
		{"0 on SQLite", with(clusterEnv, map[string]string{"SKRIP_RUNNER_CONCURRENCY": "0", "SKRIP_DATABASE_URL": ""}), 0, true},
		{"0 in cluster mode", with(clusterEnv, map[string]string{"SKRIP_RUNNER_CONCURRENCY": "0"}), 0, false},
		{"auto in cluster mode", clusterEnv, runtime.NumCPU(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(flags(t), envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if l.RunnerConcurrency != tc.want {
				t.Errorf("RunnerConcurrency = %d, want %d", l.RunnerConcurrency, tc.want)
			}
			err = l.CheckServe()
			if !tc.refused {
				if err != nil {
					t.Fatalf("CheckServe: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("CheckServe accepted no local workers outside cluster mode")
			}
			for _, w := range []string{"runner-concurrency", "SKRIP_RUNNER_CONCURRENCY", "cluster mode", "SKRIP_NATS_URL", "SKRIP_BLOB=nats", "postgres://", "auto"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestCluster: cluster mode takes all three of an external NATS, NATS for the files and
// PostgreSQL.
func TestCluster(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"one server", nil, false},
		{"cluster", clusterEnv, true},
		{"postgresql:// too", with(clusterEnv, map[string]string{"SKRIP_DATABASE_URL": "postgresql://db/skrip"}), true},
		{"the embedded NATS", with(clusterEnv, map[string]string{"SKRIP_NATS_URL": ""}), false},
		{"files on disk", with(clusterEnv, map[string]string{"SKRIP_BLOB": "fs"}), false},
		{"SQLite", with(clusterEnv, map[string]string{"SKRIP_DATABASE_URL": ""}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(flags(t), envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Cluster(); got != tc.want {
				t.Errorf("Cluster() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWorkerID: a worker is named by SKRIP_WORKER_ID, or else by its node id, a hash of
// the host name and the data dir that is the same at every start.
func TestWorkerID(t *testing.T) {
	load := func(env map[string]string) *Loaded {
		t.Helper()
		l, err := Load(flags(t), envOf(env))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, again, b := load(map[string]string{"SKRIP_DATA_DIR": "/srv/a"}), load(map[string]string{"SKRIP_DATA_DIR": "/srv/a"}), load(map[string]string{"SKRIP_DATA_DIR": "/srv/b"})
	if a.Worker() != a.Node() || len(a.Node()) != 16 {
		t.Errorf("default worker id %q, node %q; want the node's 16 hex digits", a.Worker(), a.Node())
	}
	if again.Worker() != a.Worker() || b.Worker() == a.Worker() {
		t.Errorf("worker ids %q, %q (same data dir), %q (another); want the same and another", a.Worker(), again.Worker(), b.Worker())
	}
	if named := load(map[string]string{"SKRIP_WORKER_ID": "w1"}); named.Worker() != "w1" {
		t.Errorf("SKRIP_WORKER_ID=w1 gives worker id %q", named.Worker())
	}
}

// TestClusterSettings: the cluster's own settings read their values.
func TestClusterSettings(t *testing.T) {
	l, err := Load(flags(t, "--run-ack-wait", "3s"), envOf(map[string]string{"SKRIP_NATS_WORK_BUCKET": "work2", "SKRIP_WORKER_CACHE_BYTES": "512MiB", "SKRIP_RUN_ACK_WAIT": "1m"}))
	if err != nil {
		t.Fatal(err)
	}
	if l.NATSWorkBucket != "work2" || l.WorkerCacheBytes != 512<<20 || l.RunAckWait != 3*time.Second {
		t.Fatalf("work bucket %q, cache %d, ack wait %v", l.NATSWorkBucket, l.WorkerCacheBytes, l.RunAckWait)
	}
}

// TestFrontSettings: SKRIP_TRUSTED_PROXIES takes addresses and CIDRs (an address is a
// prefix of its full length), SKRIP_PUBLIC_URL an http(s) address; anything else is
// refused at start, naming the setting.
func TestFrontSettings(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		proxies string
		public  string
		err     string
	}{
		{env: nil, proxies: "[]"},
		{env: map[string]string{"SKRIP_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8,::1,::ffff:192.0.2.1,192.168.1.7/16"},
			proxies: "[127.0.0.1/32 10.0.0.0/8 ::1/128 192.0.2.1/32 192.168.0.0/16]"},
		{env: map[string]string{"SKRIP_TRUSTED_PROXIES": "10.0.0.0/8,proxy.local"}, err: "trusted-proxies"},
		{env: map[string]string{"SKRIP_PUBLIC_URL": "https://skrip.example.org/"}, proxies: "[]", public: "https://skrip.example.org"},
		{env: map[string]string{"SKRIP_PUBLIC_URL": "https://example.org/skrip"}, proxies: "[]", public: "https://example.org/skrip"},
		{env: map[string]string{"SKRIP_PUBLIC_URL": "skrip.example.org"}, err: "public-url"},
		{env: map[string]string{"SKRIP_PUBLIC_URL": "ftp://skrip.example.org"}, err: "public-url"},
		{env: map[string]string{"SKRIP_PASSWORD_CHECKS": "0"}, err: "password-checks"},
	} {
		l, err := Load(flags(t), envOf(tc.env))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want one naming %s", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		if got := fmt.Sprint(l.TrustedProxies); got != tc.proxies {
			t.Errorf("%v: proxies %s, want %s", tc.env, got, tc.proxies)
		}
		if l.PublicURL != tc.public {
			t.Errorf("%v: public URL %q, want %q", tc.env, l.PublicURL, tc.public)
		}
	}
}

// TestCORSOrigins: SKRIP_CORS_ORIGINS takes web origins (lower-cased, a trailing slash
// dropped) or * alone; a path, another scheme or * among others is refused at start.
func TestCORSOrigins(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "[]", ""},
		{"https://App.Example.org, http://localhost:5173/", "[https://app.example.org http://localhost:5173]", ""},
		{"*", "[*]", ""},
		{"https://app.example.org/upload", "", "cors-origins"},
		{"app.example.org", "", "cors-origins"},
		{"ftp://app.example.org", "", "cors-origins"},
		{"*, https://app.example.org", "", "cors-origins"},
	} {
		l, err := Load(flags(t), envOf(map[string]string{"SKRIP_CORS_ORIGINS": tc.in}))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want one naming %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := fmt.Sprint(l.CORSOrigins); got != tc.want && !(tc.want == "[]" && len(l.CORSOrigins) == 0) {
			t.Errorf("%q: %s, want %s", tc.in, got, tc.want)
		}
	}
}
