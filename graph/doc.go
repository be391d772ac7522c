// Package graph owns projects, work items, dependencies, decomposition,
// readiness, cancellation and the graph queries (neighbourhood, critical
// path, subgraph, plan import).
//
// # Readiness
//
// An item is claimable ("ready") when it is open, has no active lease, no
// open blocking attention request, no open dependency (a prerequisite whose
// status is "open") and no open direct child. These gates are counters on
// the item row (unmet_dependencies, open_children, open_attention,
// active_lease_id) and the stored generated column ready, so the claim path
// reads the partial index items_claim. The counters are exact for every
// item, whatever its own status: finishing an item (a completion, Cancel)
// decrements the counters of its dependents and of its parent only.
//
// A cancelled prerequisite satisfies its dependents exactly as a done one
// does (the Work Graph design): BlockedBy no longer lists it, while
// Neighbourhood.Dependencies still shows it with state "cancelled" so a
// person sees that the prerequisite was dropped.
//
// The derived State: done / cancelled from the status; then leased (active
// lease), attention (open blocking request), blocked (open dependencies,
// open children, or a retry backoff not_before in the future by the
// database clock); else ready. A continuity reservation (preferred_worker
// until preferred_until) keeps the state ready: BlockedBy.ReservedFor says
// for whom.
//
// # The waits-for graph
//
// An item waits for its dependencies and a parent waits for its children.
// The union of both edge kinds is kept acyclic: AddDependency and CreateItem
// (with a parent and dependencies) take a per-project advisory lock
// (pg_advisory_xact_lock) and check reachability with a recursive query, so
// two concurrent edges that together close a cycle cannot both commit.
// Creating new items under fresh keys (CreateChildren, ImportPlan) cannot
// close a cycle through existing items; cycles among the new items are
// found in memory.
//
// # Locking order
//
// A prerequisite's row is locked before its waiter's (dependency before
// dependent, child before parent), the same order finishing follows, so a
// concurrent finish either sees a new edge or is seen by it. Cancel locks a
// subtree and may deadlock with a concurrent finish; db.InTx retries it.
//
// # Transactions
//
// A Service runs on a db.Executor: on a pool each method runs its own
// transaction (db.InTx, db.InReadTx for reads); a Service On a caller's
// transaction runs each method in a savepoint of it, so that package lease
// ends a lease and updates the graph (Item, ReleaseFinished,
// CreateChildren) in one transaction that commits or rolls back as one.
// Each operation exists once.
//
// # Edits
//
// UpdateItem changes title, body, priority, labels and metadata of an open
// item and bumps its version; it never touches a lease. On a done or
// cancelled item only labels and metadata may change (bookkeeping); other
// fields answer conflict. Version changes only through UpdateItem.
package graph
