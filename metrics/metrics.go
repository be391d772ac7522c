package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every metric of workgraph.
const Namespace = "workgraph"

// Claim results.
const (
	ClaimGranted = "granted"
	ClaimEmpty   = "empty"
)

// Reasons a fenced lease call is refused.
const (
	// RefusedStale: the lease was not granted at the presented epoch, or
	// ended otherwise than by expiry (another worker holds the item now).
	RefusedStale = "stale"
	// RefusedLate: the lease expired before the call came.
	RefusedLate = "late"
)

// Metrics counts what the server does. Its methods are safe for
// concurrent use, and do nothing on a nil *Metrics.
type Metrics struct {
	claims    *prometheus.CounterVec
	claimWait *prometheus.HistogramVec
	outcomes  *prometheus.CounterVec
	refused   *prometheus.CounterVec
	answered  prometheus.Histogram
	sweeps    *prometheus.CounterVec
	reaped    prometheus.Counter
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
}

// New makes the counters and registers them on reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "claims_total",
			Help: "Claims answered, by result: granted (a lease) or empty (nothing became ready within wait_seconds).",
		}, []string{"result"}),
		claimWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "claim_wait_seconds",
			Help:    "How long a claim took to answer (long polls included), by result.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"result"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "lease_outcomes_total",
			Help: "Leases ended, by outcome: completed, released, failed, decomposed, attention_requested by their workers through this replica; expired by this replica's sweeper.",
		}, []string{"outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "lease_calls_refused_total",
			Help: "Fenced lease calls refused (409 lease_lost), by operation and reason: stale (another epoch, or ended) or late (the lease had expired).",
		}, []string{"operation", "reason"}),
		answered: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "attention_time_to_answer_seconds",
			Help:    "From an attention request's creation to a person's answer (database clock).",
			Buckets: []float64{10, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 72 * 3600},
		}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "sweeper_runs_total",
			Help: "Runs of this replica's expiry sweeper, by result (ok or error).",
		}, []string{"result"}),
		reaped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "sweeper_leases_reaped_total",
			Help: "Expired leases this replica's sweeper ended (claims end the expired leases of their project too, uncounted here).",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route (the pattern, e.g. /v1/leases/:id/complete), method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "http_request_duration_seconds",
			Help:    "HTTP request latency, by route and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method"}),
	}
	reg.MustRegister(m.claims, m.claimWait, m.outcomes, m.refused, m.answered, m.sweeps, m.reaped, m.requests, m.latency)
	// Known label values start at zero, so a rate is defined from the
	// first scrape on.
	for _, r := range []string{ClaimGranted, ClaimEmpty} {
		m.claims.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "error"} {
		m.sweeps.WithLabelValues(r)
	}
	return m
}

// Claim counts a claim answered after waited.
func (m *Metrics) Claim(result string, waited time.Duration) {
	if m == nil {
		return
	}
	m.claims.WithLabelValues(result).Inc()
	m.claimWait.WithLabelValues(result).Observe(waited.Seconds())
}

// LeaseEnded counts a lease ended with outcome.
func (m *Metrics) LeaseEnded(outcome string) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(outcome).Inc()
}

// Refused counts a fenced call of operation (heartbeat, complete, ...)
// refused for reason (RefusedStale, RefusedLate).
func (m *Metrics) Refused(operation, reason string) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(operation, reason).Inc()
}

// Answered observes an attention request answered after age.
func (m *Metrics) Answered(age time.Duration) {
	if m == nil {
		return
	}
	m.answered.Observe(age.Seconds())
}

// SweepRun counts one run of the sweeper that ended reaped leases
// (counted as expired outcomes too) and failed with err (nil: ok).
func (m *Metrics) SweepRun(reaped int, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.sweeps.WithLabelValues(result).Inc()
	if reaped > 0 {
		m.reaped.Add(float64(reaped))
		m.outcomes.WithLabelValues("expired").Add(float64(reaped))
	}
}

// Request counts an HTTP request of route answered with status after
// took. route is the router's pattern, never the raw path (which would
// make a series per id).
func (m *Metrics) Request(route, method string, status int, took time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(took.Seconds())
}
