package metrics

import "github.com/prometheus/client_golang/prometheus"

// WaitStats are a replica's long-poll counts (lease.Notifier's WaitStats,
// in plain types): claim transactions run by waiting claims against those
// granted, which is what waking one waiter per ready item keeps near one.
type WaitStats struct {
	Waits, Skipped, Claims, Grants, Passed, Broadcasts, Rechecks, Probes, DueWakes int64
}

// WaitCollector reports a notifier's counts, read at each scrape.
type WaitCollector struct {
	stats func() WaitStats

	waits, skipped, claims, grants, passed, broadcasts, rechecks, probes, dueWakes *prometheus.Desc
}

// NewWaitCollector reports the counts stats reads.
func NewWaitCollector(stats func() WaitStats) *WaitCollector {
	d := func(n, help string) *prometheus.Desc {
		return prometheus.NewDesc(Namespace+"_wait_"+n, help, nil, nil)
	}
	return &WaitCollector{stats: stats,
		waits:      d("claims_begun_total", "Waiting claims (claims with wait_seconds > 0) begun on this replica."),
		skipped:    d("first_claims_skipped_total", "Waiting claims that waited without a first claim: the same filter's last claim found nothing and nothing since is unknown to the notifier."),
		claims:     d("claim_transactions_total", "Claim transactions run by waiting claims. Divided by workgraph_wait_grants_total: claim transactions per granted item."),
		grants:     d("grants_total", "Claim transactions of waiting claims that granted a lease."),
		passed:     d("wakeups_passed_total", "Wake-ups handed on to another waiter by a waiting claim that did not use its own."),
		broadcasts: d("broadcasts_total", "Times every waiting claim of a project was woken (LISTEN reconnected, a notification without the item, too many pending, a claim's error)."),
		rechecks:   d("rechecks_total", "Periodic rechecks run (one waiter per label set each recheck interval)."),
		probes:     d("time_gate_probes_total", "Reads of a project's next retry backoff or reservation end, one each time a waiting claim found nothing and after each time gate's instant."),
		dueWakes:   d("time_gate_instants_total", "Instants at which the items whose retry backoff or reservation ended were handed to waiting claims."),
	}
}

func (c *WaitCollector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.waits, c.skipped, c.claims, c.grants, c.passed, c.broadcasts, c.rechecks, c.probes, c.dueWakes}
}

// Describe implements prometheus.Collector.
func (c *WaitCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *WaitCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	values := []int64{s.Waits, s.Skipped, s.Claims, s.Grants, s.Passed, s.Broadcasts, s.Rechecks, s.Probes, s.DueWakes}
	for i, d := range c.descs() {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(values[i]))
	}
}
