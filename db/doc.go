// Package db owns workgraph's PostgreSQL schema and access: the goose
// migrations (embedded in the binary), the sqlc queries and their generated
// code (package dbq), the connection pool, the Executor services run on (a
// pool or a caller's transaction), the transaction helpers (InTx, InReadTx,
// Atomic: a transaction on a pool, a savepoint inside a transaction) and
// the one place where driver errors become wgerr kinds.
//
// Generated rows (dbq) stop at the domain packages graph, lease and
// attention; api and web never see them.
package db
