package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/testutil"
	"github.com/skrip-dev/skrip/internal/version"
)

// run executes the CLI in-process against env and returns its exit code and output.
func run(t *testing.T, env *apptest.Env, token, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	vars := map[string]string{"SKRIP_SERVER": env.URL, "SKRIP_TOKEN": token}
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errOut, func(k string) string { return vars[k] })
	return code, out.String(), errOut.String()
}

func TestUsersAndTokens(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	code, out, errOut := run(t, env, env.AdminToken, "a good password\n", "users", "add", "nora", "--role", "author", "--password-stdin")
	if code != 0 || !strings.Contains(out, `created author "nora"`) || !strings.Contains(out, "token: skr_") {
		t.Fatalf("users add: %d %q %q", code, out, errOut)
	}
	noraToken := strings.TrimSpace(strings.SplitN(strings.SplitN(out, "token: ", 2)[1], "\n", 2)[0])

	code, out, _ = run(t, env, env.AdminToken, "", "users", "list")
	if code != 0 || !strings.Contains(out, "nora") || !strings.Contains(out, "author") || !strings.Contains(out, "yes") {
		t.Fatalf("users list: %d %q", code, out)
	}
	code, out, _ = run(t, env, env.AdminToken, "", "users", "list", "--json")
	if code != 0 || !strings.Contains(out, `"name": "nora"`) {
		t.Fatalf("users list --json: %d %q", code, out)
	}

	// nora issues herself a token; the new token works.
	code, out, _ = run(t, env, noraToken, "", "tokens", "create", "--name", "laptop")
	fresh := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(fresh, "skr_") {
		t.Fatalf("tokens create: %d %q", code, out)
	}
	if me, err := env.Client(t, fresh).Me(context.Background()); err != nil || me.Name != "nora" {
		t.Fatalf("fresh token: %+v, %v", me, err)
	}
	// ...but not one for admin: the answer is the same as for a missing user.
	code, _, errOut = run(t, env, noraToken, "", "tokens", "create", "--user", "admin")
	if code == 0 || !strings.Contains(errOut, `no user "admin"`) {
		t.Fatalf("tokens create admin as nora: %d %q", code, errOut)
	}
	// A user cannot add users, and the CLI says why.
	code, _, errOut = run(t, env, noraToken, "", "users", "add", "x")
	if code != 1 || !strings.Contains(errOut, "needs the admin role") {
		t.Fatalf("users add as author: %d %q", code, errOut)
	}
	code, out, _ = run(t, env, env.AdminToken, "", "users", "set-role", "nora", "user")
	if code != 0 || !strings.Contains(out, "nora is now user") {
		t.Fatalf("set-role: %d %q", code, out)
	}

	// nora changes her own web password; the old one stops working, the new one signs in.
	code, _, errOut = run(t, env, noraToken, "short\n", "users", "set-password", "nora", "--password-stdin")
	if code == 0 || !strings.Contains(errOut, "at least 8 characters") {
		t.Fatalf("set-password with a short password: %d %q", code, errOut)
	}
	code, out, errOut = run(t, env, noraToken, "a better password\n", "users", "set-password", "nora", "--password-stdin")
	if code != 0 || !strings.Contains(out, "password of nora set") {
		t.Fatalf("set-password: %d %q %q", code, out, errOut)
	}
	if _, err := env.App.Accounts.CheckPassword(context.Background(), "nora", "a good password"); err == nil {
		t.Fatal("the old password still signs in")
	}
	if _, err := env.App.Accounts.CheckPassword(context.Background(), "nora", "a better password"); err != nil {
		t.Fatalf("the new password does not sign in: %v", err)
	}
	code, _, errOut = run(t, env, noraToken, "a better password\n", "users", "set-password", "admin", "--password-stdin")
	if code == 0 || !strings.Contains(errOut, `no user "admin"`) {
		t.Fatalf("nora setting admin's password: %d %q", code, errOut)
	}
}

func TestClientErrors(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	tests := []struct {
		name, token string
		args        []string
		want        string
	}{
		{"no token", "", []string{"users", "list"}, "SKRIP_TOKEN"},
		{"bad token", "skr_nope", []string{"users", "list"}, "not valid"},
		{"bad role", env.AdminToken, []string{"users", "add", "x", "--role", "root"}, `role "root" is not one of`},
		{"bad server", env.AdminToken, []string{"--server", "ftp://x", "users", "list"}, "not an http"},
		{"server down", env.AdminToken, []string{"--server", "http://127.0.0.1:1", "users", "list"}, "cannot reach skrip"},
		{"unknown verb", env.AdminToken, []string{"frobnicate"}, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, env, tc.token, "", tc.args...)
			if code == 0 || !strings.HasPrefix(errOut, "skrip: ") || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want non-zero and %q", code, errOut, tc.want)
			}
		})
	}
}

func TestDoctor(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	var out, errOut bytes.Buffer
	vars := map[string]string{"SKRIP_DATA_DIR": env.Config.DataDir, "SKRIP_BOOTSTRAP_ADMIN_TOKEN": "skr_do-not-print-me-please", "SKRIP_RUNNER": "bwrap"}
	code := Main(context.Background(), []string{"doctor", "--log-level", "debug"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
	if code != 0 {
		t.Fatalf("doctor: %d %q", code, errOut.String())
	}
	for _, want := range []string{"SKRIP_DATA_DIR", env.Config.DataDir, "env", "SKRIP_LOG_LEVEL", "debug", "flag", "Agent sandboxes", "/workspace",
		"SQLite 3.", "migrations applied", "bwrap", "python3", "cgroups", "(set, hidden)",
		"SKRIP_RUNNER=bwrap", "bubblewrap 0.", "memory", "enforced", "network", "/work/output",
		"SKRIP_BWRAP_UID", "host uid", "inside its user namespace", "system calls", "seccomp filter"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "do-not-print-me") {
		t.Fatal("doctor printed a secret")
	}
	// On an empty data dir it says the database does not exist yet, and creates nothing.
	empty := t.TempDir()
	vars = map[string]string{"SKRIP_DATA_DIR": empty}
	out.Reset()
	Main(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
	if !strings.Contains(out.String(), "does not exist yet") {
		t.Fatalf("doctor on an empty data dir:\n%s", out.String())
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Fatalf("doctor wrote into the data dir: %v", entries)
	}
}

func TestDoctorNATS(t *testing.T) {
	url := testutil.NATSServer(t)
	var out, errOut bytes.Buffer
	vars := map[string]string{"SKRIP_DATA_DIR": t.TempDir(), "SKRIP_BLOB": "nats", "SKRIP_NATS_URL": url}
	if code := Main(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] }); code != 0 {
		t.Fatalf("doctor: %d %s", code, errOut.String())
	}
	for _, want := range []string{url, "bucket skrip-files", "JetStream", "server 2.", "streams="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out.String())
		}
	}
	vars["SKRIP_NATS_URL"] = "nats://127.0.0.1:1"
	out.Reset()
	errOut.Reset()
	code := Main(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
	if code != 1 || !strings.Contains(out.String(), "not reachable") || !strings.Contains(errOut.String(), "Blob store: JetStream") {
		t.Fatalf("doctor with NATS down: exit %d, want 1:\n%s\n%s", code, out.String(), errOut.String())
	}
	// --json says the same: the failed check by name, in its section.
	out.Reset()
	code = Main(context.Background(), []string{"doctor", "--json"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
	var rep report
	if code != 1 || json.Unmarshal(out.Bytes(), &rep) != nil || len(rep.Failed) != 1 || !strings.HasPrefix(rep.Failed[0], "Blob store: JetStream") {
		t.Fatalf("doctor --json with NATS down: exit %d, %+v\n%s", code, rep.Failed, out.String())
	}
}

func TestServeHelpListsEverySetting(t *testing.T) {
	var out bytes.Buffer
	Main(context.Background(), []string{"serve", "--help"}, strings.NewReader(""), &out, &out, func(string) string { return "" })
	for _, want := range []string{"--data-dir", "SKRIP_DATA_DIR", "./skrip-data", "SKRIP_DATABASE_URL", "SKRIP_BLOB", "SKRIP_FILES_USER_QUOTA_BYTES", "--config"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
}

// TestDoctorCluster: on a cluster, doctor shows the run queue, the buckets and each
// worker by its heartbeat.
func TestDoctorCluster(t *testing.T) {
	cfg := apptest.Config(t, apptest.ClusterBackend)
	cfg.RunnerConcurrency, cfg.WorkerID = 1, "w-doctor"
	env := apptest.Start(t, cfg)
	vars := map[string]string{"SKRIP_DATA_DIR": t.TempDir(), "SKRIP_BLOB": "nats", "SKRIP_NATS_URL": env.Config.NATSURL,
		"SKRIP_DATABASE_URL": env.Config.DatabaseURL, "SKRIP_RUN_ACK_WAIT": "3s"}
	var out, errOut bytes.Buffer
	deadline := time.Now().Add(20 * time.Second)
	for {
		out.Reset()
		if code := Main(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] }); code != 0 {
			t.Fatalf("doctor: %d %s", code, errOut.String())
		}
		if strings.Contains(out.String(), "worker w-doctor") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{"Cluster", "SKRIP_RUNS", "1 replica(s)", "skrip-work:", "skrip-files:", "worker w-doctor", "bwrap, 0/1 busy, 0 sandbox(es)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out.String())
		}
	}
	// With a worker's settings (no blob store, no database) it shows the cluster too.
	delete(vars, "SKRIP_BLOB")
	delete(vars, "SKRIP_DATABASE_URL")
	out.Reset()
	if code := Main(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] }); code != 0 {
		t.Fatalf("doctor: %d %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "worker w-doctor") || !strings.Contains(out.String(), "SKRIP_RUNS") {
		t.Errorf("doctor with a worker's settings:\n%s", out.String())
	}
}

// TestWorkerRefusesDatabaseURL: a worker runs untrusted code and never holds the
// database URL; it refuses to start with one, naming the setting.
func TestWorkerRefusesDatabaseURL(t *testing.T) {
	vars := map[string]string{"SKRIP_DATA_DIR": t.TempDir(), "SKRIP_NATS_URL": "nats://127.0.0.1:1",
		"SKRIP_DATABASE_URL": "postgres://skrip:secret@db/skrip"}
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"worker"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
	if code == 0 || !strings.Contains(errOut.String(), "SKRIP_DATABASE_URL") || strings.Contains(errOut.String(), "secret") {
		t.Fatalf("worker with a database URL: exit %d, %q", code, errOut.String())
	}
	delete(vars, "SKRIP_DATABASE_URL")
	delete(vars, "SKRIP_NATS_URL")
	errOut.Reset()
	if code := Main(context.Background(), []string{"worker"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] }); code == 0 || !strings.Contains(errOut.String(), "SKRIP_NATS_URL") {
		t.Fatalf("worker without NATS: exit %d, %q", code, errOut.String())
	}
}

// TestDoctorJSON: --json is the report the table shows: every section with its checks and
// their states, and nothing failed on a machine that can serve.
func TestDoctorJSON(t *testing.T) {
	vars := map[string]string{"SKRIP_DATA_DIR": t.TempDir(), "SKRIP_RUNNER": "bwrap"}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"doctor", "--json"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] }); code != 0 {
		t.Fatalf("doctor --json: %d %s", code, errOut.String())
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("doctor --json is not JSON: %v\n%s", err, out.String())
	}
	found := map[string]check{}
	for _, s := range rep.Sections {
		for _, c := range s.Checks {
			found[s.Name+"/"+c.Name] = c
		}
	}
	if rep.Version == "" || len(rep.Failed) != 0 || found["Settings/SKRIP_DATA_DIR"].Value != vars["SKRIP_DATA_DIR"] ||
		found["Runner/bwrap"].State != stateOK || found["Database/SQLite"].State != stateInfo {
		t.Fatalf("doctor --json: %s", out.String())
	}
}

// TestDoctorServer: doctor --server checks a running server (alive, version, each
// /readyz check, the queue, the token); a refused token is a failed check (exit 1) and a
// server that does not answer exits 4.
func TestDoctorServer(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	doctor := func(token string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		vars := map[string]string{"SKRIP_TOKEN": token}
		code := Main(context.Background(), append([]string{"doctor"}, args...), strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
		return code, out.String(), errOut.String()
	}
	code, out, errOut := doctor(env.AdminToken, "--server", env.URL)
	if code != 0 {
		t.Fatalf("doctor --server: %d %s %s", code, out, errOut)
	}
	out = regexp.MustCompile(` {2,}`).ReplaceAllString(out, " ")
	for _, want := range []string{"the server at " + env.URL, "alive", "version " + version.Version, "database ok", "blob ok", "runner ok", "queue 0", "signed in as admin"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor --server lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = doctor("skr_not-a-token", "--server", env.URL, "--json")
	var rep report
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Failed) != 1 || !strings.HasPrefix(rep.Failed[0], "Token: token") {
		t.Fatalf("doctor --server with a refused token: exit %d, %s", code, out)
	}
	if code, _, errOut := doctor("", "--server", "http://"+testutil.FreeAddr(t)); code != exitUnavailable {
		t.Fatalf("doctor --server of no server: exit %d, want %d (%s)", code, exitUnavailable, errOut)
	}
}
