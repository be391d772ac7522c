package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PoolStats is what a database pool says of itself (pgxpool.Stat's
// figures, in plain types).
type PoolStats struct {
	Max, Total, Idle, Acquired, Constructing int32
	// Cumulative since the pool opened.
	Acquires, EmptyAcquires, CanceledAcquires int64
	AcquireDuration                           time.Duration
	EmptyAcquireWait                          time.Duration
}

// PoolCollector reports a database pool's statistics, read at each scrape
// (no query: the pool's own counters).
type PoolCollector struct {
	name  string
	stats func() PoolStats

	conns, max, acquires, empty, canceled, acquireSecs, emptyWaitSecs *prometheus.Desc
}

// NewPoolCollector reports the pool stats reads, labelled pool=name.
func NewPoolCollector(name string, stats func() PoolStats) *PoolCollector {
	l := prometheus.Labels{"pool": name}
	d := func(n, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(Namespace+"_db_pool_"+n, help, labels, l)
	}
	return &PoolCollector{name: name, stats: stats,
		conns:         d("connections", "Connections of the pool by state (idle, acquired, constructing).", "state"),
		max:           d("max_connections", "The pool's bound on connections."),
		acquires:      d("acquires_total", "Connections acquired from the pool."),
		empty:         d("empty_acquires_total", "Acquires that found no idle connection and waited for one."),
		canceled:      d("canceled_acquires_total", "Acquires cancelled before they got a connection."),
		acquireSecs:   d("acquire_seconds_total", "Time spent acquiring connections."),
		emptyWaitSecs: d("empty_acquire_wait_seconds_total", "Time spent waiting by acquires that found no idle connection."),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.conns, c.max, c.acquires, c.empty, c.canceled, c.acquireSecs, c.emptyWaitSecs} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	ch <- prometheus.MustNewConstMetric(c.conns, g, float64(s.Idle), "idle")
	ch <- prometheus.MustNewConstMetric(c.conns, g, float64(s.Acquired), "acquired")
	ch <- prometheus.MustNewConstMetric(c.conns, g, float64(s.Constructing), "constructing")
	ch <- prometheus.MustNewConstMetric(c.max, g, float64(s.Max))
	ch <- prometheus.MustNewConstMetric(c.acquires, k, float64(s.Acquires))
	ch <- prometheus.MustNewConstMetric(c.empty, k, float64(s.EmptyAcquires))
	ch <- prometheus.MustNewConstMetric(c.canceled, k, float64(s.CanceledAcquires))
	ch <- prometheus.MustNewConstMetric(c.acquireSecs, k, s.AcquireDuration.Seconds())
	ch <- prometheus.MustNewConstMetric(c.emptyWaitSecs, k, s.EmptyAcquireWait.Seconds())
}
