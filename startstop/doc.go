// Package startstop is the one shape of every background loop of the
// server (the lease sweeper, the lease notifier, the idempotency janitor):
// a service that is started once with a context, runs in one goroutine and
// is stopped by Stop, which waits for the goroutine to return.
//
// A service embeds Base and calls Base.Run from its Start; periodic work
// goes through Every. Tests never sleep to wait for an effect: a service
// exposes Signal values (its test signals) that a test initialises with
// Init before Start and waits on with Wait, e.g. "a sweep ran".
package startstop
