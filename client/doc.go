// Package client is the Go client of the workgraph REST API v1 (see
// docs/api.md). The CLI, the work supervisor, the MCP server and the
// end-to-end tests all talk to a server through it.
//
// Every method maps to one route, sends and returns the types of package
// wire, the same the server encodes (aliased here: client.Item is
// wire.Item). Failures the server reports come back as *Error, built from the
// problem+json answer; compare them with errors.Is against the sentinels:
//
//	_, err := c.Heartbeat(ctx, lease.ID, client.HeartbeatRequest{Epoch: lease.Epoch})
//	if errors.Is(err, client.ErrLeaseLost) {
//		// stop working on the item: someone else holds it now
//	}
//
// "Nothing ready" is not a server error: Claim returns (nil, ErrNothingReady)
// when the server answered 204 after waiting.
//
// Writes (POST, PUT, PATCH, DELETE) carry an Idempotency-Key, except
// heartbeats and completions, which are safe to repeat as they are (a
// repeated identical completion is answered as a replay). A request that
// failed in transport, or was answered 502/503/504 or 429, is retried a few
// times with the same key, so a retried claim, release, edit or removal is
// answered, not applied twice.
package client
