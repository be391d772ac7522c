package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/metrics"
)

// TestCensusCollector: scrapes within the interval reuse one census (the
// database is not read per scrape); a failed census keeps the last values
// and is counted.
func TestCensusCollector(t *testing.T) {
	t.Parallel()
	takes := 0
	var fail error
	take := func(context.Context) (db.Census, error) {
		takes++
		if fail != nil {
			return db.Census{}, fail
		}
		return db.Census{
			Items:      []db.CensusItems{{Project: "p", State: "ready", Items: 3}},
			LiveLeases: map[string]int64{"p": 2},
			Attention:  map[string]db.CensusAttention{"p": {Open: 1, OldestSeconds: 90}},
		}, nil
	}
	t.Run("OnePerInterval", func(t *testing.T) {
		c := metrics.NewCensusCollector(take, 0, nil)
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		for range 5 {
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
		}
		if takes != 1 {
			t.Fatalf("5 scrapes took %d censuses, want 1", takes)
		}
		want := `
# HELP workgraph_items Items by project and state (census of the shared database: every replica reports the same).
# TYPE workgraph_items gauge
workgraph_items{project="p",state="ready"} 3
# HELP workgraph_live_leases Live (not ended) leases by project (census).
# TYPE workgraph_live_leases gauge
workgraph_live_leases{project="p"} 2
# HELP workgraph_attention_open Open attention requests by project (census).
# TYPE workgraph_attention_open gauge
workgraph_attention_open{project="p"} 1
# HELP workgraph_attention_oldest_open_seconds Age of the oldest open attention request by project, database clock (census).
# TYPE workgraph_attention_oldest_open_seconds gauge
workgraph_attention_oldest_open_seconds{project="p"} 90
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
			"workgraph_items", "workgraph_live_leases", "workgraph_attention_open", "workgraph_attention_oldest_open_seconds"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrKeepsLast", func(t *testing.T) {
		takes = 0
		c := metrics.NewCensusCollector(take, -1, nil) // every scrape
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
		fail = errors.New("database gone")
		defer func() { fail = nil }()
		if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP workgraph_census_errors_total Censuses of the database that failed (the gauges keep the last census's values).
# TYPE workgraph_census_errors_total counter
workgraph_census_errors_total 1
# HELP workgraph_live_leases Live (not ended) leases by project (census).
# TYPE workgraph_live_leases gauge
workgraph_live_leases{project="p"} 2
`), "workgraph_census_errors_total", "workgraph_live_leases"); err != nil {
			t.Fatal(err)
		}
		if takes != 2 {
			t.Fatalf("%d censuses, want 2", takes)
		}
	})
}

// TestNilMetrics: a nil *Metrics counts nothing and does not panic.
func TestNilMetrics(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	m.Claim(metrics.ClaimGranted, 0)
	m.LeaseEnded("completed")
	m.Refused("heartbeat", metrics.RefusedLate)
	m.Answered(0)
	m.SweepRun(3, nil)
	m.Request("/v1/x", "GET", 200, 0)
}
