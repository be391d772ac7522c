package db

import (
	"context"

	"github.com/workgraph-dev/workgraph/db/dbq"
)

// Census is a count of what the database holds now, for the gauges of
// /metrics: items by state, live leases and open attention, per project
// (by name).
type Census struct {
	Items      []CensusItems
	LiveLeases map[string]int64
	Attention  map[string]CensusAttention
	// DueDeliveries: webhook deliveries due now (the backlog), by project.
	DueDeliveries map[string]int64
}

// CensusItems is how many items of Project are in State.
type CensusItems struct {
	Project, State string
	Items          int64
}

// CensusAttention is a project's open attention requests and the age of
// the oldest in seconds (by the database's clock).
type CensusAttention struct {
	Open          int64
	OldestSeconds float64
}

// TakeCensus reads the census in four statements on q (a pool; no
// transaction: the four need not agree to the instant). Its cost is a
// scan of items and two index scans; callers run it at most every few
// seconds, never per request.
func TakeCensus(ctx context.Context, q dbq.DBTX) (Census, error) {
	queries := dbq.New()
	items, err := queries.CensusItems(ctx, q)
	if err != nil {
		return Census{}, Translate(err)
	}
	leases, err := queries.CensusLiveLeases(ctx, q)
	if err != nil {
		return Census{}, Translate(err)
	}
	open, err := queries.CensusOpenAttention(ctx, q)
	if err != nil {
		return Census{}, Translate(err)
	}
	due, err := queries.CensusDueDeliveries(ctx, q)
	if err != nil {
		return Census{}, Translate(err)
	}
	c := Census{LiveLeases: map[string]int64{}, Attention: map[string]CensusAttention{}, DueDeliveries: map[string]int64{}}
	for _, r := range items {
		c.Items = append(c.Items, CensusItems{Project: r.Project, State: r.State, Items: r.Items})
	}
	for _, r := range leases {
		c.LiveLeases[r.Project] = r.Leases
	}
	for _, r := range open {
		c.Attention[r.Project] = CensusAttention{Open: r.Open, OldestSeconds: r.OldestSeconds}
	}
	for _, r := range due {
		c.DueDeliveries[r.Project] = r.Due
	}
	return c, nil
}
