// Package config owns skrip's settings: the one table of names, defaults and help, and
// how a value is chosen (flag, then SKRIP_* environment, then the --config file, then the
// default).
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/skrip-dev/skrip/internal/runner/rootfs"
)

// Config holds every setting in force for one process.
type Config struct {
	Addr                  string
	HTTPHeaderTimeout     time.Duration
	HTTPBodyIdleTimeout   time.Duration
	HTTPMaxHeaderBytes    int64
	DataDir               string
	DatabaseURL           string
	Blob                  string
	NATSURL               string
	NATSPrefix            string // names this installation's NATS assets (protocol.Names); "" for the names without one
	NATSBucket            string
	NATSWorkBucket        string
	NATSWorkerBucketBytes int64 // the size cap of a worker's own bucket, when an API node makes it
	NATSReplicas          int
	NATSUser              string
	NATSPassword          string
	NATSToken             string
	NATSCreds             string
	NATSNKeySeed          string
	NATSTLSCA             string
	NATSTLSCert           string
	NATSTLSKey            string
	BootstrapAdminToken   string
	FilesMaxFileBytes     int64
	FilesUserQuotaBytes   int64
	FilesMaxTotalBytes    int64
	FilesLinkMaxTTL       time.Duration
	FilesUploadTTL        time.Duration
	FilesVersions         int
	CleanupInterval       time.Duration
	SessionFilesTTL       time.Duration
	SessionCacheBytes     int64
	RunArtifactsTTL       time.Duration
	ShutdownGrace         time.Duration
	Runner                string
	RunnerImage           string
	BwrapRootfs           string
	BwrapUID              int
	RunnerWarmMemory      int64
	BwrapGID              int
	RunTimeout            time.Duration
	EditorRunTimeout      time.Duration
	UILang                string
	RunMemoryBytes        int64
	RunPids               int
	RunCPUs               float64
	RunTmpBytes           int64
	RunOutputBytes        int64
	RunLogBytes           int64
	// RunnerConcurrency is the runs executing at once on this process: the number of CPUs
	// for auto, and 0 for none (cluster mode only: see CheckServe).
	RunnerConcurrency   int
	RunnerQueue         int
	RunsPerUser         int
	WorkerID            string
	RunAckWait          time.Duration
	RunWorkerWait       time.Duration // how long a running run whose worker is gone waits for another
	WorkerCacheBytes    int64
	UploadMaxFiles      int
	UploadMaxFileBytes  int64
	UploadMaxTotalBytes int64
	SandboxIdleTimeout  time.Duration
	SandboxWorkspace    int64
	SandboxMemoryBudget int64
	SandboxExecTimeout  time.Duration
	SandboxMaxPerUser   int
	SandboxMaxTotal     int
	SandboxUserShare    float64
	SandboxMaxIdle      time.Duration
	LogLevel            string
	LogFormat           string
	// PublicURL is the server's address as its users reach it, for the links it builds;
	// empty: from each request (its own host, or a trusted proxy's X-Forwarded-Host).
	PublicURL string
	// TrustedProxies are the peers whose X-Forwarded-For, -Proto and -Host are believed.
	TrustedProxies []netip.Prefix
	// CORSOrigins are the web origins (https://app.example.org) whose pages may call the
	// files API and the resumable uploads with a token; "*" is any origin. Empty: none.
	CORSOrigins []string
	// PasswordChecks is how many password hashes (sign-in checks, new passwords) run at
	// once; PasswordCheckWait how long one waits for its turn before the answer is 503.
	PasswordChecks    int
	PasswordCheckWait time.Duration
	// SignInFailuresPerName and SignInFailuresPerAddress are the failed sign-ins a name
	// and a client address may have before each further one waits; SignInMaxDelay is the
	// longest wait, SignInThrottleEntries the names and addresses remembered at once.
	SignInFailuresPerName    int
	SignInFailuresPerAddress int
	SignInMaxDelay           time.Duration
	SignInThrottleEntries    int
	// TokenMaxLifetime is the longest expiry a new API token may have (0: no maximum).
	TokenMaxLifetime time.Duration
	// WebSessionIdle and WebSessionMax end a browser sign-in unused that long, and that
	// long after it began.
	WebSessionIdle time.Duration
	WebSessionMax  time.Duration
	// CLILoginsPending and CLILoginsPerAddress cap the `skrip login`s waiting for a
	// browser's approval: in all, and from one client address.
	CLILoginsPending    int
	CLILoginsPerAddress int
	// CLICodeFailures are the codes matching no CLI login one signed-in user may enter
	// before each further one waits.
	CLICodeFailures int
	// Per-user caps (docs/operating.md "Limits per user"): problem reports in an hour,
	// upload links that still work, unfinished resumable uploads, API tokens held, and
	// editor lints running at once on one server.
	ReportsPerHour     int
	UploadLinksPerUser int
	UploadsPerUser     int
	TokensPerUser      int
	LintsPerUser       int
	// SignOn is OpenID Connect sign-in (SKRIP_OIDC_*); its Issuer is empty when it is off.
	SignOn SignOn
	// Passwords is who may sign in with a password: "on" (everyone) or "admin".
	Passwords string
	// AuditRetention is how long audit events are kept; 0 keeps them for good.
	AuditRetention time.Duration
	// Review is review before publishing (SKRIP_REVIEW=on): authors submit versions,
	// reviewers and admins publish them.
	Review bool
}

// kind says how a setting's text is parsed.
type kind int

const (
	kString kind = iota
	kInt
	kBytes
	kDuration
	kSecret
	kFloat
	kURL   // may carry a password, hidden when shown
	kCount // a whole number, or auto
)

// Setting is one row of the table: its flag name, environment variable, default and help.
type Setting struct {
	Name    string // flag name, e.g. "data-dir"; the env var is SKRIP_DATA_DIR
	Default string
	Help    string
	// Shown is how docs/settings.md and --help name a default computed at start ("the
	// number of CPUs"); empty means Default itself.
	Shown string
	// Aliases are earlier names of the setting, still read (flag, env and file) so that
	// a renamed setting keeps working; the current name wins.
	Aliases []string
	kind    kind
	choices []string
	bind    func(c *Config, v string) error
}

// Env returns the environment variable that sets s.
func (s Setting) Env() string { return envName(s.Name) }

func envName(name string) string {
	return "SKRIP_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// names are the setting's name and then its aliases.
func (s Setting) names() []string { return append([]string{s.Name}, s.Aliases...) }

// Secret reports whether the value must not be printed.
func (s Setting) Secret() bool { return s.kind == kSecret }

// Display is the value as `skrip doctor` prints it: a secret is hidden, and so is the
// password or token inside a URL.
func (v Value) Display() string {
	switch {
	case v.Value == "":
		return `""`
	case v.Secret():
		return "(set, hidden)"
	case v.kind == kURL:
		return redactURLs(v.Value)
	}
	return v.Value
}

// redactURLs hides the user information of each URL in a comma-separated list.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = url.User("xxxxx")
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// Settings is the table of every setting with its default. It is the only place defaults
// live; docs/settings.md and `skrip serve --help` are generated from the same rows.
func Settings() []Setting {
	return []Setting{
		{Name: "addr", Default: "127.0.0.1:8080", Help: "address the HTTP server listens on", bind: str(func(c *Config) *string { return &c.Addr })},
		{Name: "http-header-timeout", Default: "10s", Help: "a request whose header fields take longer than this to arrive is dropped; 0 waits forever", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.HTTPHeaderTimeout })},
		{Name: "http-body-idle-timeout", Default: "60s", Help: "a request body that sends nothing for this long is cut off with 408; 0 waits forever", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.HTTPBodyIdleTimeout })},
		{Name: "http-max-header-bytes", Default: "1048576", Help: "largest request line and header fields of a request; larger ones get 431", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.HTTPMaxHeaderBytes })},
		{Name: "data-dir", Default: "./skrip-data", Help: "directory holding skrip.db, blobs/, nats/ and work/", bind: str(func(c *Config) *string { return &c.DataDir })},
		{Name: "database-url", Default: "", Help: "postgres://… to use PostgreSQL; empty uses SQLite in the data dir", kind: kSecret, bind: str(func(c *Config) *string { return &c.DatabaseURL })},
		{Name: "blob", Default: "fs", Help: "where file bytes live: fs (the data dir) or nats (JetStream Object Store)", choices: []string{"fs", "nats"}, bind: str(func(c *Config) *string { return &c.Blob })},
		{Name: "nats-url", Default: "", Help: "NATS server or cluster URL for --blob=nats; empty runs an embedded nats-server under <data>/nats", kind: kURL, bind: str(func(c *Config) *string { return &c.NATSURL })},
		{Name: "nats-prefix", Default: "", Help: "starts the name of every NATS asset of this installation, so that several share one NATS account: with prefix p, the stream p_SKRIP_RUNS, the buckets p-skrip-workers, p-skrip-keys, p-skrip-files and p-skrip-work, and subjects under p. (p.skrip.jobs.…); letters, digits and _, at most 32; the same on every API node and worker of the installation; empty keeps the names without a prefix", bind: natsPrefix},
		{Name: "nats-bucket", Default: "skrip-files", Shown: "skrip-files, or <prefix>-skrip-files with --nats-prefix", Help: "JetStream Object Store bucket for --blob=nats", bind: str(func(c *Config) *string { return &c.NATSBucket })},
		{Name: "nats-work-bucket", Default: "skrip-work", Shown: "skrip-work, or <prefix>-skrip-work with --nats-prefix", Help: "JetStream Object Store bucket, in cluster mode, of what workers may see: run inputs and session files, tool scripts, artifacts on their way in, sandbox transfers", bind: str(func(c *Config) *string { return &c.NATSWorkBucket })},
		{Name: "nats-worker-bucket-bytes", Default: "8GiB", Help: "in cluster mode, the size cap of a worker's own bucket (its runs' reports and artifacts on their way in, its sandboxes' file transfers) when an API node makes it, so that a worker cannot fill the NATS servers' disks; an existing bucket is left as it is", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.NATSWorkerBucketBytes })},
		{Name: "nats-replicas", Default: "1", Help: "replicas of the Object Store bucket when skrip creates it (1, 3 or 5 in a cluster); an existing bucket is left as it is", kind: kInt, bind: intv(func(c *Config) *int { return &c.NATSReplicas })},
		{Name: "nats-user", Default: "", Help: "user for the NATS server at --nats-url, with --nats-password", bind: str(func(c *Config) *string { return &c.NATSUser })},
		{Name: "nats-password", Default: "", Help: "password of --nats-user", kind: kSecret, bind: str(func(c *Config) *string { return &c.NATSPassword })},
		{Name: "nats-token", Default: "", Help: "token for the NATS server at --nats-url", kind: kSecret, bind: str(func(c *Config) *string { return &c.NATSToken })},
		{Name: "nats-creds", Default: "", Help: "credentials file (user JWT and NKey seed) for the NATS server at --nats-url", bind: str(func(c *Config) *string { return &c.NATSCreds })},
		{Name: "nats-nkey-seed", Default: "", Help: "file holding a user NKey seed for the NATS server at --nats-url", bind: str(func(c *Config) *string { return &c.NATSNKeySeed })},
		{Name: "nats-tls-ca", Default: "", Help: "PEM file of the CAs that sign the NATS server's certificate; setting it requires TLS", bind: str(func(c *Config) *string { return &c.NATSTLSCA })},
		{Name: "nats-tls-cert", Default: "", Help: "PEM client certificate for NATS, with --nats-tls-key", bind: str(func(c *Config) *string { return &c.NATSTLSCert })},
		{Name: "nats-tls-key", Default: "", Help: "PEM private key of --nats-tls-cert", bind: str(func(c *Config) *string { return &c.NATSTLSKey })},
		{Name: "bootstrap-admin-token", Default: "", Help: "make sure user admin exists and accepts this token (at least 16 characters)", kind: kSecret, bind: str(func(c *Config) *string { return &c.BootstrapAdminToken })},
		{Name: "files-max-file-bytes", Default: "104857600", Help: "largest staged file (bytes; 100MiB, 1GB also accepted)", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.FilesMaxFileBytes })},
		{Name: "files-user-quota-bytes", Default: "1073741824", Help: "staged bytes one user may hold", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.FilesUserQuotaBytes })},
		{Name: "files-max-total-bytes", Default: "10737418240", Help: "staged bytes the whole store may hold", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.FilesMaxTotalBytes })},
		{Name: "files-link-max-ttl", Default: "7d", Help: "longest ttl of a staged file's share link (a link never outlives its file either)", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.FilesLinkMaxTTL })},
		{Name: "files-upload-ttl", Default: "24h", Help: "how long an unfinished resumable upload (/api/v1/uploads/) waits for its next bytes before the janitor deletes them", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.FilesUploadTTL })},
		{Name: "files-versions", Default: "0", Help: "previous versions of a staged file kept when its key is overwritten, newest first (they count against the quota and the total); 0 keeps none, and the janitor trims the ones beyond it", kind: kInt, bind: intv(func(c *Config) *int { return &c.FilesVersions })},
		{Name: "session-files-ttl", Default: "24h", Help: "how long a tool session's uploaded files are kept after their last use", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.SessionFilesTTL })},
		{Name: "session-cache-bytes", Default: "2GiB", Help: "with SKRIP_BLOB=nats, size of the cache of session files under the data dir that runs get hard links from (each file is fetched from NATS once); past it the files used least recently go", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.SessionCacheBytes })},
		{Name: "run-artifacts-ttl", Default: "30d", Help: "how long a run's artifacts are kept after it finished; 0 keeps them for good", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.RunArtifactsTTL })},
		{Name: "cleanup-interval", Default: "1h", Help: "how often the janitor removes expired files and session files", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.CleanupInterval })},
		{Name: "runner", Default: "auto", Help: "sandbox for tool runs: auto (docker if the engine answers, else bwrap), bwrap or docker", choices: []string{"auto", "bwrap", "docker"}, bind: str(func(c *Config) *string { return &c.Runner })},
		{Name: "runner-image", Default: "", Shown: "skrip-runner:<version>", Help: "image of the Docker runner (build it with `skrip runner-image build`)", bind: str(func(c *Config) *string { return &c.RunnerImage })},
		{Name: "bwrap-rootfs", Default: "", Help: "directory mounted read-only as the bwrap sandbox's root (the runner rootfs); empty uses " + rootfs.DefaultDir + " when it is built there, else the host's /usr; \"host\" always uses the host's /usr", bind: str(func(c *Config) *string { return &c.BwrapRootfs })},
		{Name: "bwrap-uid", Default: "65534", Help: "host uid that bwrap sandboxes (runs and agent sandbox execs) run as when skrip runs as root; never 0 (a server that is not root runs them as itself)", kind: kInt, bind: hostID(func(c *Config) *int { return &c.BwrapUID })},
		{Name: "bwrap-gid", Default: "65534", Help: "host gid of bwrap sandboxes when skrip runs as root; never 0", kind: kInt, bind: hostID(func(c *Config) *int { return &c.BwrapGID })},
		{Name: "run-timeout", Default: "120s", Help: "wall-time limit of a production run", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.RunTimeout })},
		{Name: "editor-run-timeout", Default: "60s", Help: "wall-time limit of a run in the editor (an author trying a version)", Aliases: []string{"sandbox-run-timeout"}, kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.EditorRunTimeout })},
		{Name: "run-memory-bytes", Default: "1073741824", Help: "memory limit of a run", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.RunMemoryBytes })},
		{Name: "run-pids", Default: "256", Help: "process limit of a run", kind: kInt, bind: intv(func(c *Config) *int { return &c.RunPids })},
		{Name: "run-cpus", Default: "1", Help: "CPUs a run may use (fractions allowed)", kind: kFloat, bind: f64(func(c *Config) *float64 { return &c.RunCPUs })},
		{Name: "run-tmp-bytes", Default: "268435456", Help: "size of a run's /tmp", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.RunTmpBytes })},
		{Name: "run-output-bytes", Default: "104857600", Help: "size of a run's /work/output", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.RunOutputBytes })},
		{Name: "run-log-bytes", Default: "200000", Help: "bytes of stdout and of stderr kept per run", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.RunLogBytes })},
		{Name: "runner-concurrency", Default: "auto", Help: "runs executing at once on this server: auto is the number of CPUs; 0 runs none here, leaving them to workers, and `skrip serve` refuses it outside cluster mode (SKRIP_NATS_URL set, SKRIP_BLOB=nats and a postgres:// SKRIP_DATABASE_URL)", kind: kCount, bind: count(func(c *Config) *int { return &c.RunnerConcurrency })},
		{Name: "runner-warm-memory", Default: "512MiB", Help: "memory that Python interpreters parked ahead of runs, with the modules recent tools import already imported, may hold together (docs/runner-contract.md \"Warm starts\"); none are parked while the machine's available memory is below twice this; 0 parks none, and every run starts Python itself", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.RunnerWarmMemory })},
		{Name: "runner-queue", Default: "64", Help: "runs waiting for a worker before new ones get 503", kind: kInt, bind: intv(func(c *Config) *int { return &c.RunnerQueue })},
		{Name: "runs-per-user", Default: "8", Help: "runs one user may have queued and running at once, in the whole cluster; past it that user's new runs get 429 (0: no cap)", kind: kInt, bind: intv(func(c *Config) *int { return &c.RunsPerUser })},
		{Name: "worker-id", Default: "", Shown: "a hash of the host name and the data dir", Help: "name of this worker among a cluster's, in its heartbeat and on the runs it claims", bind: str(func(c *Config) *string { return &c.WorkerID })},
		{Name: "run-ack-wait", Default: "30s", Help: "in cluster mode, how long a worker may go silent before its run is given to another worker (at least 1s)", kind: kDuration, bind: minDur(time.Second, func(c *Config) *time.Duration { return &c.RunAckWait })},
		{Name: "run-worker-wait", Default: "5m", Help: "in cluster mode, how long a running run whose worker is gone (its heartbeat left the registry) waits for another worker to take it over before it fails as \"worker lost\" (at least 1s)", kind: kDuration, bind: minDur(time.Second, func(c *Config) *time.Duration { return &c.RunWorkerWait })},
		{Name: "worker-cache-bytes", Default: "2GiB", Help: "size of a worker's cache of input files, session files and tool scripts under the data dir", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.WorkerCacheBytes })},
		{Name: "upload-max-files", Default: "20", Help: "files in one run's upload", kind: kInt, bind: intv(func(c *Config) *int { return &c.UploadMaxFiles })},
		{Name: "upload-max-file-bytes", Default: "20000000", Help: "largest file in a run's upload", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.UploadMaxFileBytes })},
		{Name: "upload-max-total-bytes", Default: "50000000", Help: "all files of a run's upload together", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.UploadMaxTotalBytes })},
		{Name: "sandbox-idle-timeout", Default: "15m", Help: "an agent sandbox unused this long is destroyed (a sandbox may ask for less, or for more up to SKRIP_SANDBOX_MAX_IDLE, and an admin's up to 24h)", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.SandboxIdleTimeout })},
		{Name: "sandbox-workspace-bytes", Default: "1073741824", Help: "largest /workspace of an agent sandbox (a sandbox may ask for less)", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.SandboxWorkspace })},
		{Name: "sandbox-memory-budget", Default: "0", Shown: "half of the machine's memory", Help: "memory the /workspace tmpfs of every agent sandbox may take together; 0 is half of the machine's memory, and more than 80% of it is refused", kind: kBytes, bind: i64(func(c *Config) *int64 { return &c.SandboxMemoryBudget })},
		{Name: "sandbox-exec-timeout", Default: "10m", Help: "longest timeout_s one exec in an agent sandbox may ask for", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.SandboxExecTimeout })},
		{Name: "sandbox-max-per-user", Default: "10", Help: "agent sandboxes one user may hold at once", kind: kInt, bind: intv(func(c *Config) *int { return &c.SandboxMaxPerUser })},
		{Name: "sandbox-max-total", Default: "64", Help: "agent sandboxes this server holds at once; beyond it new ones get 503 with Retry-After", kind: kInt, bind: intv(func(c *Config) *int { return &c.SandboxMaxTotal })},
		{Name: "public-url", Default: "", Help: "the server's address as its users reach it (https://skrip.example.org), for the links it builds; empty builds them from each request: its own host, or what a trusted proxy names in X-Forwarded-Host and X-Forwarded-Proto", bind: publicURL(func(c *Config) *string { return &c.PublicURL })},
		{Name: "cors-origins", Default: "", Help: "comma-separated web origins (https://app.example.org) whose pages may call the files API and the resumable uploads (tus) from the browser, with an API token (never with the web's sign-in cookie); * allows any origin; empty allows none", bind: origins(func(c *Config) *[]string { return &c.CORSOrigins })},
		{Name: "trusted-proxies", Default: "", Help: "comma-separated addresses or CIDRs (10.0.0.0/8, ::1) of the proxies in front of the server, whose X-Forwarded-For, X-Forwarded-Proto and X-Forwarded-Host are believed: for the client address that sign-in throttling and the request log use, the Secure cookie flag and the links the server builds; empty trusts no proxy", bind: prefixes(func(c *Config) *[]netip.Prefix { return &c.TrustedProxies })},
		{Name: "password-checks", Default: "auto", Shown: "the number of CPUs", Help: "password hashes (argon2id, 64 MiB each) that run at once, for sign-ins and new passwords; their memory is at most this times 64 MiB", kind: kCount, bind: atLeastOne(func(c *Config) *int { return &c.PasswordChecks })},
		{Name: "password-check-wait", Default: "2s", Help: "how long a sign-in or a new password waits for a free password check before the answer is 503 with Retry-After", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.PasswordCheckWait })},
		{Name: "signin-failures-per-name", Default: "5", Help: "failed sign-ins with one user name before each further one must wait, the wait doubling from 2s up to --signin-max-delay; it fades when the failures stop, and a sign-in that succeeds clears it", kind: kInt, bind: atLeastOne(func(c *Config) *int { return &c.SignInFailuresPerName })},
		{Name: "signin-failures-per-address", Default: "20", Help: "failed sign-ins from one client address (an IPv6 /64) before each further one must wait, as for a name (higher, for many people behind one school's address)", kind: kInt, bind: atLeastOne(func(c *Config) *int { return &c.SignInFailuresPerAddress })},
		{Name: "signin-max-delay", Default: "1m", Help: "longest wait a throttled name or address is given between failed sign-ins", kind: kDuration, bind: minDur(time.Second, func(c *Config) *time.Duration { return &c.SignInMaxDelay })},
		{Name: "signin-throttle-entries", Default: "10000", Help: "names and addresses whose failed sign-ins are remembered at once; past it the least recently failed are forgotten", kind: kInt, bind: atLeastOne(func(c *Config) *int { return &c.SignInThrottleEntries })},
		{Name: "token-max-lifetime", Default: "0", Help: "longest expiry a new API token may be given; a token asked for without one gets this one; 0 allows tokens that last until revoked", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.TokenMaxLifetime })},
		{Name: "web-session-idle", Default: "8h", Help: "a browser sign-in unused this long ends", kind: kDuration, bind: minDur(time.Minute, func(c *Config) *time.Duration { return &c.WebSessionIdle })},
		{Name: "web-session-max", Default: "30d", Help: "a browser sign-in ends this long after it began, however much it is used", kind: kDuration, bind: minDur(time.Minute, func(c *Config) *time.Duration { return &c.WebSessionMax })},
		{Name: "cli-logins-pending", Default: "1000", Help: "`skrip login`s waiting for a browser's approval that the server holds at once; past it a new one gets 503 with Retry-After (each waits at most 10 minutes)", kind: kInt, bind: atLeastOne(func(c *Config) *int { return &c.CLILoginsPending })},
		{Name: "cli-logins-per-address", Default: "5", Help: "`skrip login`s waiting for approval that one client address (an IPv6 /64) may hold at once; past it a new one gets 429 with Retry-After", kind: kInt, bind: atLeastOne(func(c *Config) *int { return &c.CLILoginsPerAddress })},
		{Name: "cli-code-failures-per-user", Default: "5", Help: "codes matching no `skrip login` that one signed-in user may enter on /cli/login before each further one must wait, the wait doubling from 2s up to --signin-max-delay (1 to 1000)", kind: kInt, bind: between(1, 1000, func(c *Config) *int { return &c.CLICodeFailures })},
		{Name: "reports-per-hour", Default: "20", Help: "problem reports one user may make in an hour, counted across a cluster; past it 429 (1 to 100000)", kind: kInt, bind: between(1, 100000, func(c *Config) *int { return &c.ReportsPerHour })},
		{Name: "upload-links-per-user", Default: "100", Help: "upload links that still work (unexpired, with a use left) one user may hold; past it a new one gets 409 (1 to 100000)", kind: kInt, bind: between(1, 100000, func(c *Config) *int { return &c.UploadLinksPerUser })},
		{Name: "uploads-per-user", Default: "100", Help: "unfinished resumable uploads (/api/v1/uploads/) one user may have; past it a new one gets 409 (1 to 100000)", kind: kInt, bind: between(1, 100000, func(c *Config) *int { return &c.UploadsPerUser })},
		{Name: "tokens-per-user", Default: "100", Help: "API tokens one user may hold (a `skrip login` makes one too); past it a new one gets 409 (1 to 100000)", kind: kInt, bind: between(1, 100000, func(c *Config) *int { return &c.TokensPerUser })},
		{Name: "lints-per-user", Default: "2", Help: "editor lints (the editor's checks as you type) one user may have running at once on one server; past it 429 (1 to 1000; all lints together take at most half the workers)", kind: kInt, bind: between(1, 1000, func(c *Config) *int { return &c.LintsPerUser })},
		{Name: "oidc-issuer", Default: "", Help: "OpenID Connect issuer to sign in through, exactly as its discovery document names it (https://accounts.google.com, https://login.microsoftonline.com/<tenant>/v2.0); empty turns sign-on off. The redirect URI to register is <SKRIP_PUBLIC_URL>/auth/oidc/callback", bind: str(func(c *Config) *string { return &c.SignOn.Issuer })},
		{Name: "oidc-name", Default: "", Shown: "the issuer's host", Help: "the provider's name on the sign-in page's button (Logga in med <name>)", bind: str(func(c *Config) *string { return &c.SignOn.Name })},
		{Name: "oidc-client-id", Default: "", Help: "the client id skrip has at the OpenID provider", bind: str(func(c *Config) *string { return &c.SignOn.ClientID })},
		{Name: "oidc-client-secret", Default: "", Help: "the client secret skrip has at the OpenID provider", kind: kSecret, bind: str(func(c *Config) *string { return &c.SignOn.ClientSecret })},
		{Name: "oidc-scopes", Default: "openid profile email", Help: "scopes asked of the OpenID provider, separated by spaces or commas (openid is always asked)", bind: words(func(c *Config) *[]string { return &c.SignOn.Scopes })},
		{Name: "oidc-allowed-domains", Default: "", Help: "e-mail domains whose people may sign on, comma-separated (skola.se, elev.skola.se); empty lets anyone the provider vouches for in. With a list, the e-mail must be verified when the provider says whether it is", bind: words(func(c *Config) *[]string { return &c.SignOn.AllowedDomains })},
		{Name: "oidc-role-claim", Default: "", Help: "the ID token or userinfo claim (a string or a list of strings, such as groups) that --oidc-role-map reads; empty gives every new user --oidc-default-role and never changes a role", bind: str(func(c *Config) *string { return &c.SignOn.RoleClaim })},
		{Name: "oidc-role-map", Default: "", Help: "claim value=role pairs, comma-separated (skrip-admins=admin,teachers=author): the highest role any value maps to is the user's on every sign-on, else --oidc-default-role", bind: pairs(func(c *Config) *map[string]string { return &c.SignOn.RoleMap })},
		{Name: "oidc-default-role", Default: "user", Help: "role of a user who signs on with no mapped claim value", bind: str(func(c *Config) *string { return &c.SignOn.DefaultRole })},
		{Name: "passwords", Default: "on", Help: "who may sign in with a password: on (everyone who has one) or admin (only admins, a break-glass way in when sign-on is used)", choices: []string{"on", "admin"}, bind: str(func(c *Config) *string { return &c.Passwords })},
		{Name: "audit-retention", Default: "400d", Help: "how long the audit log keeps an event (admin actions and sign-ins); the janitor removes older ones; 0 keeps them for good", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.AuditRetention })},
		{Name: "sandbox-user-share", Default: "0.25", Help: "share of the sandboxes' memory budget the workspaces of one user's sandboxes may reserve together, from above 0 to 1 (in a cluster, of all workers' budgets together); a user may always reserve one workspace of SKRIP_SANDBOX_WORKSPACE_BYTES, budget permitting", kind: kFloat, bind: fraction(func(c *Config) *float64 { return &c.SandboxUserShare })},
		{Name: "sandbox-max-idle", Default: "1h", Help: "longest idle_timeout a user who is not an admin may ask for an agent sandbox; more is refused (an admin may ask for up to 24h, or SKRIP_SANDBOX_IDLE_TIMEOUT when longer)", kind: kDuration, bind: minDur(time.Second, func(c *Config) *time.Duration { return &c.SandboxMaxIdle })},
		{Name: "review", Default: "off", Help: "review before publishing: on makes authors (and reviewers) submit a version for review instead of publishing it, and a reviewer or an admin publishes it or asks for changes; admins may always publish (docs/authoring.md \"Review before publishing\")", choices: []string{"off", "on"}, bind: onOff(func(c *Config) *bool { return &c.Review })},
		{Name: "shutdown-grace", Default: "30s", Help: "how long SIGTERM waits for requests in flight", kind: kDuration, bind: dur(func(c *Config) *time.Duration { return &c.ShutdownGrace })},
		{Name: "ui-lang", Default: "sv", Help: "language of the web UI for a browser that asks for neither Swedish nor English: sv or en (a user can pick the other at the foot of every page)", choices: []string{"sv", "en"}, bind: str(func(c *Config) *string { return &c.UILang })},
		{Name: "log-level", Default: "info", Help: "debug, info, warn or error", choices: []string{"debug", "info", "warn", "error"}, bind: str(func(c *Config) *string { return &c.LogLevel })},
		{Name: "log-format", Default: "text", Help: "text or json", choices: []string{"text", "json"}, bind: str(func(c *Config) *string { return &c.LogFormat })},
	}
}

// Source says where a setting's value came from.
type Source string

// Where a value came from, in order of precedence.
const (
	FromFlag    Source = "flag"
	FromEnv     Source = "env"
	FromFile    Source = "config file"
	FromDefault Source = "default"
)

// Value is one resolved setting, for `skrip doctor`.
type Value struct {
	Setting
	Value  string
	Source Source
}

// Loaded is the result of Load: the typed config and each setting's value and source.
type Loaded struct {
	Config
	Values []Value
}

// RegisterFlags adds one flag per setting to fs, plus --config.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "optional YAML file of settings (keys are the flag names)")
	for _, s := range Settings() {
		help := s.Help + " (env " + s.Env() + ")"
		def := s.Default
		if s.Shown != "" {
			def = s.Shown
		}
		fs.String(s.Name, def, help)
		for _, a := range s.Aliases {
			fs.String(a, def, help)
			fs.MarkDeprecated(a, "use --"+s.Name)
		}
	}
}

// Load resolves every setting from fs (flags the user set), the environment (getenv) and
// the --config file, in that order, falling back to the default.
func Load(fs *pflag.FlagSet, getenv func(string) string) (*Loaded, error) {
	file := map[string]string{}
	path := getenv("SKRIP_CONFIG")
	if f := fs.Lookup("config"); f != nil && f.Changed {
		path = f.Value.String()
	}
	if path != "" {
		var err error
		if file, err = readFile(path); err != nil {
			return nil, err
		}
	}
	known := map[string]bool{}
	out := &Loaded{}
	for _, s := range Settings() {
		v := Value{Setting: s, Value: s.Default, Source: FromDefault}
		for _, n := range s.names() {
			known[n] = true
		}
		from := "" // the alias the user set, which an error about the value names too
		if val, src, name, ok := resolve(s, fs, getenv, file); ok {
			v.Value, v.Source = val, src
			if name != s.Env() && name != "--"+s.Name && name != s.Name {
				from = " " + name
			}
		}
		if err := s.check(v.Value); err != nil {
			return nil, fmt.Errorf("setting %s (%s, from %s%s): %w", s.Name, s.Env(), v.Source, from, err)
		}
		if err := s.bind(&out.Config, v.Value); err != nil {
			return nil, fmt.Errorf("setting %s (%s, from %s%s): %w", s.Name, s.Env(), v.Source, from, err)
		}
		out.Values = append(out.Values, v)
	}
	prefixBuckets(out)
	for k := range file {
		if !known[k] {
			return nil, fmt.Errorf("config file %s: unknown setting %q; the settings are listed by `skrip serve --help`", path, k)
		}
	}
	return out, nil
}

// prefixBuckets puts SKRIP_NATS_PREFIX in front of the files and work buckets' names
// when the operator left them at their defaults, so that a prefix alone names all of an
// installation's NATS assets; a bucket set explicitly keeps its name.
func prefixBuckets(l *Loaded) {
	if l.Config.NATSPrefix == "" {
		return
	}
	for i, v := range l.Values {
		if v.Source != FromDefault {
			continue
		}
		switch v.Name {
		case "nats-bucket", "nats-work-bucket":
			l.Values[i].Value = l.Config.NATSPrefix + "-" + v.Default
			v.bind(&l.Config, l.Values[i].Value)
		}
	}
}

// natsPrefix binds SKRIP_NATS_PREFIX, refusing a prefix that cannot start a NATS name.
// It is protocol.CheckPrefix's rule (TestNATSPrefixRule keeps them one), which config
// does not import: it would link the runner into every package that reads a setting.
func natsPrefix(c *Config, v string) error {
	const max = 32
	if len(v) > max {
		return fmt.Errorf("%q is %d characters long; a NATS prefix has at most %d", v, len(v), max)
	}
	for i, r := range v {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !letter && (i == 0 || r != '_') {
			return fmt.Errorf(`%q cannot start NATS names: a NATS prefix holds only letters, digits and "_", and begins with a letter or digit (it starts stream and bucket names, and is the first token of every subject; no "-", so that one installation's bucket names never start another's)`, v)
		}
	}
	c.NATSPrefix = v
	return nil
}

// Cluster reports whether the settings make this process part of a cluster: an external
// NATS (SKRIP_NATS_URL) holding the files (SKRIP_BLOB=nats), and PostgreSQL, which
// several servers can share. Only then can runs be left to workers.
func (c Config) Cluster() bool {
	return c.NATSURL != "" && c.Blob == "nats" && isPostgresURL(c.DatabaseURL)
}

// isPostgresURL is store.IsPostgresURL, which config cannot import (the store imports
// the SQL drivers).
func isPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// CheckServe refuses what `skrip serve` cannot run with: no local workers
// (SKRIP_RUNNER_CONCURRENCY=0) outside cluster mode, where no other process would run
// the tools.
func (c Config) CheckServe() error {
	if c.RunnerConcurrency == 0 && !c.Cluster() {
		return errors.New("setting runner-concurrency (SKRIP_RUNNER_CONCURRENCY) is 0, no local workers, which only cluster mode allows " +
			"(SKRIP_NATS_URL set, SKRIP_BLOB=nats and a postgres:// SKRIP_DATABASE_URL): nothing else would run the tools; " +
			"set it to auto (the number of CPUs) or to the number of runs at once")
	}
	return nil
}

// Node names this process among those sharing a database or a cluster: a hash of its
// host name and its data dir, stable across restarts.
func (c Config) Node() string {
	host, _ := os.Hostname()
	dir, _ := filepath.Abs(c.DataDir)
	sum := sha256.Sum256([]byte(host + "\x00" + dir))
	return hex.EncodeToString(sum[:8])
}

// Worker is this process's worker id: SKRIP_WORKER_ID, or else its Node.
func (c Config) Worker() string {
	if c.WorkerID != "" {
		return c.WorkerID
	}
	return c.Node()
}

// Path returns a path inside the data dir.
func (c *Config) Path(elem ...string) string {
	return filepath.Join(append([]string{c.DataDir}, elem...)...)
}

// resolve finds s's value: a flag the user set, then the environment, then the file,
// each under the setting's name before its aliases. name is how the user spelled it
// (--flag, SKRIP_ENV or the file's key), for an error about the value.
func resolve(s Setting, fs *pflag.FlagSet, getenv func(string) string, file map[string]string) (val string, src Source, name string, ok bool) {
	for _, n := range s.names() {
		if f := fs.Lookup(n); f != nil && f.Changed {
			return f.Value.String(), FromFlag, "--" + n, true
		}
	}
	for _, n := range s.names() {
		if e, ok := lookupEnv(getenv, envName(n)); ok {
			return e, FromEnv, envName(n), true
		}
	}
	for _, n := range s.names() {
		if fv, ok := file[n]; ok {
			return fv, FromFile, n, true
		}
	}
	return "", "", "", false
}

func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

func readFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	raw := map[string]any{}
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config file %s is not valid YAML: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		name := strings.ReplaceAll(strings.ToLower(k), "_", "-")
		switch t := v.(type) {
		case string:
			out[name] = t
		case nil:
			out[name] = ""
		case map[string]any, []any:
			return nil, fmt.Errorf("config file %s: setting %q must be a single value", path, k)
		default:
			out[name] = fmt.Sprint(t)
		}
	}
	return out, nil
}

func (s Setting) check(v string) error {
	if len(s.choices) == 0 {
		return nil
	}
	for _, c := range s.choices {
		if v == c {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(s.choices, ", "))
}

// onOff binds a setting whose value is on or off (its choices) to a bool.
func onOff(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error { *field(c) = v == "on"; return nil }
}

func str(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *field(c) = v; return nil }
}

func intv(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a whole number", v)
		}
		*field(c) = n
		return nil
	}
}

// between binds a whole number from lo to hi.
func between(lo, hi int, field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%q is not a whole number from %d to %d", v, lo, hi)
		}
		*field(c) = n
		return nil
	}
}

// hostID binds a host uid or gid a sandbox runs as: a whole number, never 0, since a
// sandbox never runs as host root.
func hostID(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 || n == 1<<32-1 {
			return fmt.Errorf("%q is not a host id other than 0 (root) and 4294967295", v)
		}
		*field(c) = int(n)
		return nil
	}
}

func i64(field func(*Config) *int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := ParseBytes(v)
		if err != nil {
			return err
		}
		*field(c) = n
		return nil
	}
}

func f64(field func(*Config) *float64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("%q is not a positive number", v)
		}
		*field(c) = n
		return nil
	}
}

// fraction binds a share of something: a number above 0 and at most 1.
func fraction(field func(*Config) *float64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || !(n > 0 && n <= 1) {
			return fmt.Errorf("%q is not a share above 0 and at most 1, such as 0.25", v)
		}
		*field(c) = n
		return nil
	}
}

// count binds a number of things at once: auto is the number of CPUs.
func count(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v == "auto" {
			*field(c) = runtime.NumCPU()
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is neither auto nor a whole number", v)
		}
		*field(c) = n
		return nil
	}
}

// atLeastOne binds a count (or auto) of at least 1.
func atLeastOne(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		if err := count(field)(c, v); err != nil {
			return err
		}
		if *field(c) < 1 {
			return fmt.Errorf("%q is less than 1", v)
		}
		return nil
	}
}

// publicURL binds an absolute http or https URL, or nothing.
func publicURL(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v != "" {
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
				return fmt.Errorf("%q is not an http:// or https:// address such as https://skrip.example.org", v)
			}
			v = strings.TrimSuffix(v, "/")
		}
		*field(c) = v
		return nil
	}
}

// origins binds a comma-separated list of web origins (scheme://host[:port], no path), or
// "*" alone.
func origins(field func(*Config) *[]string) func(*Config, string) error {
	return func(c *Config, v string) error {
		var out []string
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if part != "*" {
				u, err := url.Parse(part)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
					return fmt.Errorf("%q is not a web origin such as https://app.example.org (a scheme and a host, no path)", part)
				}
				part = strings.ToLower(u.Scheme + "://" + u.Host)
			}
			out = append(out, part)
		}
		if len(out) > 1 && slices.Contains(out, "*") {
			return fmt.Errorf("%q: * allows every origin and goes alone", v)
		}
		*field(c) = out
		return nil
	}
}

// prefixes binds a comma-separated list of addresses and CIDRs; an address is a prefix
// of its full length.
func prefixes(field func(*Config) *[]netip.Prefix) func(*Config, string) error {
	return func(c *Config, v string) error {
		var out []netip.Prefix
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if p, err := netip.ParsePrefix(part); err == nil {
				out = append(out, p.Masked())
				continue
			}
			a, err := netip.ParseAddr(part)
			if err != nil {
				return fmt.Errorf("%q is not an address or a CIDR such as 10.0.0.0/8", part)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
		*field(c) = out
		return nil
	}
}

// minDur binds a duration of at least least.
func minDur(least time.Duration, field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := ParseDuration(v)
		if err != nil {
			return err
		}
		if d < least {
			return fmt.Errorf("%q is shorter than %v", v, least)
		}
		*field(c) = d
		return nil
	}
}

func dur(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := ParseDuration(v)
		if err != nil {
			return err
		}
		*field(c) = d
		return nil
	}
}
