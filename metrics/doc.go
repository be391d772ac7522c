// Package metrics owns the figures /metrics exposes in Prometheus's
// format: what the API and the background services count as they work
// (claims, lease outcomes, refused calls, HTTP requests, sweeps), the
// gauges of a periodic census of the database (items by state, live
// leases, open attention), and the database pool's statistics.
//
// The domain packages (graph, lease, attention) know nothing of it: the
// API and the server report to a *Metrics at their boundary, and a nil
// *Metrics counts nothing. Counters are per replica (sum them across
// replicas); the census gauges describe the one shared database, so every
// replica reports the same values (take max, not sum).
package metrics
