package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/workgraph-dev/workgraph/db"
)

// DefaultCensusInterval is how old a census may be before a scrape takes a
// new one.
const DefaultCensusInterval = 15 * time.Second

// censusTimeout bounds one census: a scrape never waits longer for it (the
// last census is reported instead, and census_errors_total counts it).
const censusTimeout = 5 * time.Second

// CensusCollector reports the gauges of the database's census (items by
// state, live leases, open attention and the age of the oldest, per
// project). A scrape takes a new census only when the last is older than
// the interval, so the database does the census's work at most once per
// interval per replica, however often it is scraped.
type CensusCollector struct {
	take     func(context.Context) (db.Census, error)
	interval time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	last   db.Census
	taken  time.Time
	errors prometheus.Counter

	items, leases, open, oldest, due, age *prometheus.Desc
}

// NewCensusCollector reports the census take makes, refreshed at most
// every interval (0: DefaultCensusInterval; negative: every scrape, for
// tests).
func NewCensusCollector(take func(context.Context) (db.Census, error), interval time.Duration, log *slog.Logger) *CensusCollector {
	if interval == 0 {
		interval = DefaultCensusInterval
	}
	if log == nil {
		log = slog.Default()
	}
	return &CensusCollector{
		take: take, interval: interval, log: log,
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "census_errors_total",
			Help: "Censuses of the database that failed (the gauges keep the last census's values)."}),
		items: prometheus.NewDesc(Namespace+"_items", "Items by project and state (census of the shared database: every replica reports the same).",
			[]string{"project", "state"}, nil),
		leases: prometheus.NewDesc(Namespace+"_live_leases", "Live (not ended) leases by project (census).",
			[]string{"project"}, nil),
		open: prometheus.NewDesc(Namespace+"_attention_open", "Open attention requests by project (census).",
			[]string{"project"}, nil),
		oldest: prometheus.NewDesc(Namespace+"_attention_oldest_open_seconds", "Age of the oldest open attention request by project, database clock (census).",
			[]string{"project"}, nil),
		due: prometheus.NewDesc(Namespace+"_webhook_deliveries_due", "Webhook deliveries due now (pending, their next attempt passed) by project: the delivery backlog (census).",
			[]string{"project"}, nil),
		age: prometheus.NewDesc(Namespace+"_census_age_seconds", "How old the census these gauges report is.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *CensusCollector) Describe(ch chan<- *prometheus.Desc) {
	c.errors.Describe(ch)
	for _, d := range []*prometheus.Desc{c.items, c.leases, c.open, c.oldest, c.due, c.age} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *CensusCollector) Collect(ch chan<- prometheus.Metric) {
	cen, taken := c.census()
	c.errors.Collect(ch)
	if taken.IsZero() {
		return
	}
	for _, it := range cen.Items {
		ch <- prometheus.MustNewConstMetric(c.items, prometheus.GaugeValue, float64(it.Items), it.Project, it.State)
	}
	for p, n := range cen.LiveLeases {
		ch <- prometheus.MustNewConstMetric(c.leases, prometheus.GaugeValue, float64(n), p)
	}
	for p, a := range cen.Attention {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(a.Open), p)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, a.OldestSeconds, p)
	}
	for p, n := range cen.DueDeliveries {
		ch <- prometheus.MustNewConstMetric(c.due, prometheus.GaugeValue, float64(n), p)
	}
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, time.Since(taken).Seconds())
}

// census is the last census, taken anew when older than the interval.
// Scrapes wait for one census at a time (the lock), never start several.
func (c *CensusCollector) census() (db.Census, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.taken.IsZero() && c.interval > 0 && time.Since(c.taken) < c.interval {
		return c.last, c.taken
	}
	ctx, cancel := context.WithTimeout(context.Background(), censusTimeout)
	defer cancel()
	cen, err := c.take(ctx)
	if err != nil {
		c.errors.Inc()
		c.log.Warn("metrics: census of the database failed; reporting the last one", "err", err)
		return c.last, c.taken
	}
	c.last, c.taken = cen, time.Now()
	return c.last, c.taken
}
