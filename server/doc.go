// Package server wires workgraph together: it opens (or embeds) the
// database, migrates it, builds the domain services, mounts the API and the
// web UI on one Echo instance, runs the background services (lease expiry
// sweeper, readiness listener) and shuts all of it down gracefully.
//
// cmd/workgraph only parses flags and calls Run; end-to-end tests call
// Start with Addr "127.0.0.1:0".
package server
