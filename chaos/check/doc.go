// Package check holds the fault suite's history (every client operation as
// the client saw it, the server's own lease and item rows as the database
// holds them, the faults the nemesis injected) and the checker that judges
// it. The checker is pure: it reads a History and returns the violations of
// each invariant, so a unit test can feed it doctored histories.
package check
