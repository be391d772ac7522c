// Package cli is the workgraph command line: the server's own commands
// (serve, migrate, token) and the client commands agents and people use.
// cmd/workgraph only calls Main.
package cli
