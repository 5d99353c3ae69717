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
	JanitorDeletions *prometheus.CounterVec // by kind
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
		JanitorDeletions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skrip_janitor_deletions_total", Help: "Things the janitor removed, by kind.",
		}, []string{"kind"}),
	}
	m.Registry.MustRegister(m.Requests, m.RequestDuration, m.BytesUploaded, m.BytesDownloaded, m.JanitorDeletions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
