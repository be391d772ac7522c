package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// The event log's cost on the hot path is measured against the same
// server and statements with the event triggers (db/migrations/00016)
// disabled: workload 2's "rest-events-off" variant, interleaved with
// "rest". Not a product switch: the bench disables the triggers of its
// own database around that variant's rounds and enables them again
// after each round and when it exits.

// eventTriggers are the event triggers of 00016, by table.
var eventTriggers = map[string][]string{
	"items":              {"items_event_created", "items_event_state"},
	"leases":             {"leases_event_granted", "leases_event_ended"},
	"lease_refusals":     {"lease_refusals_event"},
	"attention_requests": {"attention_event_opened", "attention_event_closed"},
	"tokens":             {"tokens_event_created", "tokens_event_revoked"},
}

var restoreEventsOnce sync.Once

// eventsOff disables the event triggers; eventsOn enables them.
func (e *env) eventsOff(ctx context.Context) error {
	restoreEventsOnce.Do(func() {
		e.closer = append(e.closer, func() { _ = e.eventsOn(context.Background()) })
	})
	return e.setEventTriggers(ctx, "DISABLE")
}

func (e *env) eventsOn(ctx context.Context) error { return e.setEventTriggers(ctx, "ENABLE") }

func (e *env) setEventTriggers(ctx context.Context, how string) error {
	var stmts []string
	for table, triggers := range eventTriggers {
		for _, t := range triggers {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s %s TRIGGER %s", table, how, t))
		}
	}
	_, err := e.pool.Exec(ctx, strings.Join(stmts, "; "))
	return err
}
