package db

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/workgraph-dev/workgraph/db/dbq"
)

// Census is a count of what the database holds now, for the gauges of
// /metrics: items by state, live leases and open attention, per project
// (by name).
type Census struct {
	// Items has a row for every project and state, LiveLeases,
	// Attention and DueDeliveries an entry for every project: 0 for what
	// a project has none of (a gauge series that vanished would read "no
	// data", not 0).
	Items      []CensusItems
	LiveLeases map[string]int64
	Attention  map[string]CensusAttention
	// DueDeliveries: webhook deliveries due now (the backlog), by project.
	DueDeliveries map[string]int64
}

// ItemStates are the derived states of an item the census counts.
var ItemStates = []string{"ready", "leased", "attention", "blocked", "done", "cancelled"}

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

// TakeCensus reads the census in five statements on e (the projects,
// then the four counts) in one read-only snapshot (InReadTx), so that its
// figures agree at one instant: a project's leased items are its live
// leases, however fast workers claim and release. Its cost is a scan of
// items and index scans; callers run it at most every few seconds, never
// per request.
func TakeCensus(ctx context.Context, e Executor) (Census, error) {
	queries := dbq.New()
	var (
		projects []dbq.Project
		items    []dbq.CensusItemsRow
		leases   []dbq.CensusLiveLeasesRow
		open     []dbq.CensusOpenAttentionRow
		due      []dbq.CensusDueDeliveriesRow
	)
	err := InReadTx(ctx, e, func(tx pgx.Tx) error {
		var err error
		if projects, err = queries.ListProjects(ctx, tx); err != nil {
			return err
		}
		if items, err = queries.CensusItems(ctx, tx); err != nil {
			return err
		}
		if leases, err = queries.CensusLiveLeases(ctx, tx); err != nil {
			return err
		}
		if open, err = queries.CensusOpenAttention(ctx, tx); err != nil {
			return err
		}
		due, err = queries.CensusDueDeliveries(ctx, tx)
		return err
	})
	if err != nil {
		return Census{}, err
	}
	c := Census{LiveLeases: map[string]int64{}, Attention: map[string]CensusAttention{}, DueDeliveries: map[string]int64{}}
	counted := map[CensusItems]int64{}
	for _, p := range projects {
		for _, st := range ItemStates {
			counted[CensusItems{Project: p.Name, State: st}] = 0
		}
		c.LiveLeases[p.Name], c.Attention[p.Name], c.DueDeliveries[p.Name] = 0, CensusAttention{}, 0
	}
	for _, r := range items { // a project made after the list above is counted too
		counted[CensusItems{Project: r.Project, State: r.State}] = r.Items
	}
	for k, n := range counted {
		k.Items = n
		c.Items = append(c.Items, k)
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
