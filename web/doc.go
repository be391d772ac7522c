// Package web is the server-rendered UI for the people who supervise agents:
// the attention inbox, the items board and item pages, the dependency graph
// as a picture, lease history and the workers' live leases.
//
// Pages are html/template templates embedded in the binary; each page is a
// typed struct with a Render method. Every action that changes state is a
// plain form POST answered with a redirect (POST/redirect/GET), so the UI
// works without JavaScript; a few lines of self-hosted JavaScript only
// refresh the live counters and tables.
//
// People sign in with a human or admin token; the UI keeps a server-side
// session (see session.go) and never accepts bearer tokens, just as the
// JSON API under /v1 never accepts the session cookie. Every POST carries the
// session's CSRF token and is refused when the browser says it comes from
// another site (see csrf.go). Everything agents wrote is escaped by
// html/template; markdown is rendered with raw HTML disabled and sanitised
// again with bluemonday.
//
// The dependency graph is laid out in Go (graphlayout.go) and drawn as SVG
// (graphsvg.go); Drawings (drawings.go) bounds each picture before its
// layout starts, runs layouts per project under the request's context, and
// caches them.
//
// The UI calls the domain services (graph, lease, attention, auth) directly,
// not the HTTP API.
package web
