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

	eventsSent  *prometheus.CounterVec
	streams     prometheus.Gauge
	lastEvent   prometheus.Gauge
	horizonWait prometheus.Histogram
	deleted     prometheus.Counter
	overdue     *prometheus.CounterVec

	deliveries      *prometheus.CounterVec
	deliveryLatency prometheus.Histogram
	hooksDisabled   prometheus.Counter
	hooksPaused     prometheus.Counter
}

// Results of a webhook delivery attempt (Delivery).
const (
	DeliveryDelivered = "delivered"
	DeliveryRetry     = "retry"
	DeliveryFailed    = "failed"
	// DeliveryRefused: the address guard refused the webhook's address
	// (private, loopback); the delivery failed without a request.
	DeliveryRefused = "refused"
	// DeliveryLost: the attempt's lock passed to another attempt before
	// its result was recorded; the other attempt counts.
	DeliveryLost = "lost"
	// DeliveryReleased: the attempt was cut by this replica's stop before
	// an answer came; the delivery was given back unrecorded, to be sent
	// again (by any replica), and counts against no receiver.
	DeliveryReleased = "released"
)

// Routes that hand events to readers (EventsSent).
const (
	EventsPoll   = "poll"
	EventsStream = "stream"
)

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
	m.eventsSent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "events_sent_total",
		Help: "Events handed to readers by this replica, by route: poll (GET events, long polls included) or stream (server-sent events).",
	}, []string{"route"})
	m.streams = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "event_streams",
		Help: "Event streams (server-sent events) open on this replica now.",
	})
	m.lastEvent = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "events_last_number",
		Help: "The event log's newest number as this replica's follower last saw it (it looks only while someone waits on the log).",
	})
	m.horizonWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "events_horizon_wait_seconds",
		Help:    "How long computing the event log's horizon took (waiting for the transactions that hold numbers below it to settle).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
	m.deleted = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "events_deleted_total",
		Help: "Events deleted by this replica's retention (older than --events-retention).",
	})
	m.overdue = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "attention_overdue_total",
		Help: "Attention deadlines this replica's deadline sweeper fired, by policy (none, escalate, default_answer, release).",
	}, []string{"policy"})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "webhook_deliveries_total",
		Help: "Webhook delivery attempts made by this replica, by result: delivered, retry (failed, tried again later), failed (for good), refused (the address guard refused the address), lost (the attempt's lock passed to another).",
	}, []string{"result"})
	m.deliveryLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "webhook_delivery_duration_seconds",
		Help:    "How long a webhook's receiver took to answer an attempt (attempts that sent a request).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
	m.hooksDisabled = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "webhooks_disabled_total",
		Help: "Webhooks this replica's deliverer disabled after failing for too long (DisableAfter, a day by default).",
	})
	m.hooksPaused = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "webhooks_paused_total",
		Help: "Pauses of a whole webhook this replica's deliverer set: its receiver failed three times in a row or more, or answered with Retry-After.",
	})
	reg.MustRegister(m.claims, m.claimWait, m.outcomes, m.refused, m.answered, m.sweeps, m.reaped, m.requests, m.latency,
		m.eventsSent, m.streams, m.lastEvent, m.horizonWait, m.deleted, m.overdue,
		m.deliveries, m.deliveryLatency, m.hooksDisabled, m.hooksPaused)
	// Known label values start at zero, so a rate is defined from the
	// first scrape on.
	for _, r := range []string{ClaimGranted, ClaimEmpty} {
		m.claims.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "error"} {
		m.sweeps.WithLabelValues(r)
	}
	for _, r := range []string{EventsPoll, EventsStream} {
		m.eventsSent.WithLabelValues(r)
	}
	for _, p := range []string{"none", "escalate", "default_answer", "release"} {
		m.overdue.WithLabelValues(p)
	}
	for _, r := range []string{DeliveryDelivered, DeliveryRetry, DeliveryFailed, DeliveryRefused, DeliveryLost, DeliveryReleased} {
		m.deliveries.WithLabelValues(r)
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

// EventsSent counts n events handed to a reader by route (EventsPoll,
// EventsStream).
func (m *Metrics) EventsSent(route string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.eventsSent.WithLabelValues(route).Add(float64(n))
}

// StreamOpened counts an event stream open until the returned func is
// called.
func (m *Metrics) StreamOpened() (closed func()) {
	if m == nil {
		return func() {}
	}
	m.streams.Inc()
	return m.streams.Dec
}

// EventLogPolled records the newest number of the log a follower saw.
func (m *Metrics) EventLogPolled(last int64) {
	if m == nil {
		return
	}
	m.lastEvent.Set(float64(last))
}

// HorizonComputed observes how long computing a horizon took.
func (m *Metrics) HorizonComputed(took time.Duration) {
	if m == nil {
		return
	}
	m.horizonWait.Observe(took.Seconds())
}

// EventsDeleted counts n events deleted by retention.
func (m *Metrics) EventsDeleted(n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.deleted.Add(float64(n))
}

// AttentionOverdue counts a deadline fired with policy ("" is "none").
func (m *Metrics) AttentionOverdue(policy string) {
	if m == nil {
		return
	}
	if policy == "" {
		policy = "none"
	}
	m.overdue.WithLabelValues(policy).Inc()
}

// Delivery counts a webhook delivery attempt of result (DeliveryDelivered,
// ...) and, when it sent a request, observes the receiver's latency;
// disabled: the attempt's failure disabled the webhook. The attempt is
// counted last, so that a scrape that sees it counted sees its latency and
// the disabling too.
func (m *Metrics) Delivery(result string, sent bool, latency time.Duration, disabled, paused bool) {
	if m == nil {
		return
	}
	if sent {
		m.deliveryLatency.Observe(latency.Seconds())
	}
	if disabled {
		m.hooksDisabled.Inc()
	}
	if paused {
		m.hooksPaused.Inc()
	}
	m.deliveries.WithLabelValues(result).Inc()
}
