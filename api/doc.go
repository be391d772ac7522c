// Package api is workgraph's JSON API under /v1, served by Echo: one small
// file per resource (projects, tokens, items, dependencies, claims, leases,
// attention, plans), strict JSON input, problem+json errors whose status and
// code come from the one table in problem.go, bearer-token authentication
// with roles, Idempotency-Key replay for every POST, per-token rate limits,
// and the OpenAPI 3.1 document served at /v1/openapi.json.
//
// Handlers speak the domain packages' types (graph.Item, lease.Lease,
// attention.Request) and turn them into the JSON shapes of the contract,
// the types of package wire (item_view.go, lease_view.go); generated
// database rows never reach this package
// (the idempotency store in idempotency.go reads its own table only).
package api
