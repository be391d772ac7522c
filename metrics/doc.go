// Package metrics owns the figures /metrics exposes in Prometheus's
// format: what the API and the background services count as they work
// (claims, lease outcomes, refused calls, HTTP requests, sweeps, events
// handed to readers, deadlines fired, webhook deliveries), the gauges of a
// periodic census of the database (items by state, live leases, open
// attention, the webhook delivery backlog), and the database pool's
// statistics.
//
// The domain packages (graph, lease, attention, events, webhook) know
// nothing of it: the API and the server report to a *Metrics at their
// boundary (the background services through the observers the server
// sets on them), and a nil *Metrics counts nothing. Counters are per
// replica (sum them across replicas); the census gauges describe the one
// shared database, so every replica reports the same values (take max,
// not sum).
package metrics
