// Command chaos is workgraph's fault suite: real processes, real faults,
// and a checker that judges every client operation against the server's
// own history read straight from the database.
//
// It starts a PostgreSQL cluster of its own (ports 55440-55449, never the
// shared server), builds the workgraph binary, runs three `serve` replicas
// on loopback ports 18440-18449 (replica 0 reaches the database through the
// suite's TCP proxy), and per scenario drives workers over the replicas
// while a seeded nemesis kills and restarts replicas, terminates the
// servers' database connections, restarts PostgreSQL, delays, stalls and
// cuts the proxied link, and SIGSTOPs a replica serving lease holders for
// longer than twice the lease. See docs/reliability.md.
//
//	go run ./chaos                     # the full run
//	go run ./chaos -short              # the short run CI does
//	go run ./chaos -seed 7 -duration 30s -scenarios pause,mixed
//
// The exit status is 0 when every invariant held, 1 on any violation, 2
// when the suite itself could not run.
package main
