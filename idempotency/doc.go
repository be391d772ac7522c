// Package idempotency owns the records of Idempotency-Key requests (table
// idempotency_keys): one per (token, key), holding the request's hash, the
// lock of the request running it (its owner), whether its effect committed
// and, once it finished, its answer.
//
// The store decides everything in the database: a record is begun, taken
// over, renewed, marked and finished by single statements carrying the
// owner as a predicate, judged by the database's clock (the clock seam).
// The HTTP middleware that hashes requests and replays answers lives in
// api; this package knows nothing of HTTP beyond the status it stores.
//
// Janitor is the background service that deletes expired records.
package idempotency
