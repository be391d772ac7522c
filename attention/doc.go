// Package attention owns attention requests: questions about an item for a
// person, opened by the worker holding the item's lease, by the system
// (repeated expiry or failure, see package lease) or by a person (a hold).
//
// # What a request does to its item
//
// A blocking request counts in the item's open_attention, and the item is not
// claimable while that counter is above zero (the generated column items.ready
// and the claim index read it). Open increments it (inside the caller's
// transaction when the Service is On one); Resolve and Dismiss decrement it in their own. When the last
// blocking request closes, readiness comes back by itself if nothing else
// blocks the item: dependencies, open children and leases are separate
// counters that keep their own verdict, so an item whose prerequisites are
// still open stays blocked.
//
// A non-blocking request leaves the item and its lease alone; its answer
// reaches the worker on its next heartbeat (ClosedForLease).
//
// # Fencing
//
// A worker's request is fenced by package lease, which locks (or ends) the
// lease with the fence predicate in the same transaction before it calls
// Open on a Service On that transaction; Open itself trusts its caller. This package never imports lease.
//
// # Continuity policy
//
// The worker whose lease ended for a blocking request (NewRequest.Worker) is
// remembered on the item as its pending preferred worker, together with the
// token that lease was granted to (NewRequest.WorkerToken). When the item's
// last blocking request is resolved or dismissed, the preference gets a
// window: for Config.ContinuityWindow (10 minutes by default) the claim gives
// the item only to that worker label presented by that same token (the
// label is self-declared: another token of the project naming it gets
// nothing reserved); after the window anyone may claim it,
// and any claim clears the preference. The window starts at the resolution,
// even if dependencies or children still block the item, so an item is never
// reserved for longer than the window after its person answered. A request
// without a worker (a hold, a system request) keeps a pending preference and
// drops an old window.
//
// # History
//
// Requests are never deleted; a resolution or dismissal is written once
// (database triggers refuse any later change). Resolving twice is a
// conflict. Dismissal stores the person's note in Answer.
package attention
