// Package fence is the destination side of workgraph's fencing: a gate
// that a service which agents write to (a repository host, a deployment
// tool, another database) runs inside its OWN PostgreSQL transaction before
// it applies an effect, so that a worker which lost its workgraph lease
// cannot change the destination after a newer worker did.
//
// The gate keeps two things per resource, in tables it creates in a schema
// the destination names (Migrate):
//
//   - a committed high-water mark: the largest fencing token admitted.
//     Admit refuses a smaller token (ErrStaleToken) in the same statement
//     that advances the mark, and admits an equal one (fencing alone does
//     not deduplicate). The mark advances only when the destination's
//     transaction commits: a rolled-back transaction leaves it where it
//     was.
//   - operation receipts: a stable operation id and the hash of its
//     payload. An identical replay is answered with the stored result
//     without applying the effect again; a changed payload under the same
//     id is refused (ErrOperationConflict).
//
// A workgraph lease carries a signed fence token (Token: lease, item,
// project, epoch, signed with the deployment's Ed25519 key). Verify checks
// it offline against the public key the server publishes; the token's
// resource is project/item and its fencing value the epoch. Middleware
// does all of it for Go HTTP destinations (headers Workgraph-Fence and
// Workgraph-Operation).
//
// The package depends only on pgx and the standard library, so a
// destination imports it without the rest of workgraph.
package fence
