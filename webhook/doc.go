// Package webhook owns a project's webhooks and their delivery: the
// subscriptions (URL, event types wanted, signing secret, format), the one
// delivery record of each (webhook, event) pair, every attempt made, and
// the answer links that let a notification's recipient answer one
// attention request without signing in.
//
// Delivery is at least once, from the event log: a fan-out step turns the
// events after each webhook's cursor, up to the log's horizon
// (events.Horizon), into delivery rows and moves the cursor in the same
// statement; replicas take due rows with FOR UPDATE SKIP LOCKED and lock
// each for one attempt until a time of the database's clock, so a replica
// killed mid-attempt frees its rows when that time passes and the event is
// sent again, with the same webhook-id. Requests are signed as the
// Standard Webhooks specification says (Sign) and sent through a client
// that refuses loopback, link-local and private addresses at dial time
// (Guard).
package webhook
