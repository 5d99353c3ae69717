// Package metrics owns skrip's Prometheus collectors. One Metrics value is made per
// server and passed to the packages that count things; nothing is registered globally.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds every collector skrip exports on /metrics.
type Metrics struct {
	Registry         *prometheus.Registry
	Requests         *prometheus.CounterVec   // by route and code
	RequestDuration  *prometheus.HistogramVec // by route
	BytesUploaded    prometheus.Counter
	BytesDownloaded  prometheus.Counter
	BlobReadErrors   *prometheus.CounterVec // by reason: missing, short, checksum, unavailable, failed
	JanitorDeletions *prometheus.CounterVec // by kind
	Runs             *prometheus.CounterVec // by final status
	RunDuration      prometheus.Histogram
	QueueDepth       prometheus.Gauge // runs admitted and not yet started
	// The server's cache of session files, when its blob store is not on its disk.
	SessionCacheHits   prometheus.Counter // session files linked from the cache
	SessionCacheMisses prometheus.Counter // session files fetched from the blob store into it

	// In a cluster (docs/cluster.md).
	DispatchClaims *prometheus.CounterVec // workers' claims answered, by answer
	LateResults    prometheus.Counter     // results of attempts since taken over, discarded
	WorkerLost     prometheus.Counter     // runs failed because their workers were lost
	WorkerRuns     prometheus.Gauge       // runs this worker executes now
	CacheHits      prometheus.Counter     // input files a worker found in its cache
	CacheMisses    prometheus.Counter     // input files a worker fetched
	DispatchHashed prometheus.Counter     // input files an API node read whole for their checksum
	DispatchSent   prometheus.Counter     // files an API node put in the work bucket

	// Password checks and sign-in throttling (docs/operating.md "Limits per user").
	PasswordHashes        prometheus.Gauge       // password hashes running now
	PasswordHashesPeak    prometheus.Gauge       // the most that ever ran at once
	PasswordHashesRefused prometheus.Counter     // sign-ins and new passwords refused for want of a turn (503)
	SignInThrottled       *prometheus.CounterVec // sign-ins refused with 429, by what was throttled: address or name
}

// New makes and registers the collectors, with Go and process collectors beside them.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skrip_http_requests_total", Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "skrip_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		BytesUploaded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_bytes_uploaded_total", Help: "Bytes received in uploads that were stored.",
		}),
		BytesDownloaded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_bytes_downloaded_total", Help: "Bytes sent in downloads.",
		}),
		BlobReadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skrip_blob_read_errors_total",
			Help: "Reads of a staged file's bytes that failed, by reason: missing (gone from the blob store), short (fewer bytes than recorded), unavailable (the blob store did not answer), failed (any other error, such as one in the middle of a download).",
		}, []string{"reason"}),
		JanitorDeletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skrip_janitor_deletions_total", Help: "Things the janitor removed, by kind.",
		}, []string{"kind"}),
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skrip_runs_total", Help: "Finished runs by status.",
		}, []string{"status"}),
		RunDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "skrip_run_duration_seconds", Help: "Wall time of finished runs, from start to end.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
		}),
		QueueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skrip_run_queue_depth", Help: "Runs admitted and waiting for a worker.",
		}),
		SessionCacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_session_cache_hits_total", Help: "Session files given to a run from this server's cache, by checksum, without reading the blob store.",
		}),
		SessionCacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_session_cache_misses_total", Help: "Session files this server fetched from the blob store into its cache.",
		}),
		DispatchClaims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skrip_dispatch_claims_total", Help: "Workers' claims of runs this API node answered, by answer: go, final (the run was over) or stale (another attempt holds it).",
		}, []string{"answer"}),
		LateResults: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_late_results_discarded_total", Help: "Results of run attempts that another worker had taken over, discarded.",
		}),
		WorkerLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_runs_worker_lost_total", Help: "Runs failed because every worker that tried them was lost.",
		}),
		WorkerRuns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skrip_worker_runs_in_flight", Help: "Runs this worker executes now.",
		}),
		CacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_worker_cache_hits_total", Help: "Input files this worker found in its cache, by checksum.",
		}),
		CacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_worker_cache_misses_total", Help: "Input files this worker fetched from the work bucket.",
		}),
		DispatchHashed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_dispatch_inputs_hashed_total", Help: "Input files of runs this API node read whole to learn their checksum (a session file linked from its cache is not read).",
		}),
		DispatchSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_dispatch_files_sent_total", Help: "Files of runs (inputs, session files, scripts) this API node put in the work bucket, not finding them there by checksum.",
		}),
		PasswordHashes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skrip_password_hashes_in_flight", Help: "Password hashes (argon2id) running now; at most SKRIP_PASSWORD_CHECKS.",
		}),
		PasswordHashesPeak: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skrip_password_hashes_peak", Help: "The most password hashes that ran at once since the server started.",
		}),
		PasswordHashesRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skrip_password_checks_refused_total", Help: "Sign-ins and new passwords answered 503 because every password check was busy for SKRIP_PASSWORD_CHECK_WAIT.",
		}),
		SignInThrottled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skrip_signin_throttled_total", Help: "Sign-ins refused with 429 after repeated failures, by what was throttled: address (the client's) or name (the user name's).",
		}, []string{"by"}),
	}
	m.Registry.MustRegister(m.PasswordHashes, m.PasswordHashesPeak, m.PasswordHashesRefused, m.SignInThrottled,
		m.Requests, m.RequestDuration, m.BytesUploaded, m.BytesDownloaded, m.BlobReadErrors, m.JanitorDeletions,
		m.Runs, m.RunDuration, m.QueueDepth, m.DispatchClaims, m.LateResults, m.WorkerLost, m.WorkerRuns, m.CacheHits, m.CacheMisses,
		m.SessionCacheHits, m.SessionCacheMisses, m.DispatchHashed, m.DispatchSent,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// WarmSource is a runner that parks interpreters ahead of runs (runner.Warmer): its
// numbers, read at each scrape.
type WarmSource func() (parked, coming int, bytes, budget, warm, cold int64)

// RegisterWarm exports what a runner's parked interpreters hold
// (docs/runner-contract.md "Warm starts").
func (m *Metrics) RegisterWarm(src WarmSource) {
	get := func(i int) func() float64 {
		return func() float64 {
			p, co, b, bud, w, c := src()
			return [...]float64{float64(p), float64(b), float64(bud), float64(w), float64(c), float64(co)}[i]
		}
	}
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skrip_runner_parked_interpreters",
			Help: "Python interpreters parked ahead of runs, ready, with the modules recent tools import already imported."}, get(0)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skrip_runner_parked_bytes",
			Help: "Memory the parked interpreters hold together (their sandboxes' cgroups, measured when each became ready)."}, get(1)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skrip_runner_parked_budget_bytes",
			Help: "Memory the parked interpreters may hold together (SKRIP_RUNNER_WARM_MEMORY)."}, get(2)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "skrip_runner_warm_starts_total",
			Help: "Runs served by a parked interpreter."}, get(3)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "skrip_runner_cold_starts_total",
			Help: "Runs that found no parked interpreter for their modules and started Python themselves."}, get(4)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "skrip_runner_parking_interpreters",
			Help: "Interpreters being parked: started, importing their modules, not ready yet."}, get(5)),
	)
}
