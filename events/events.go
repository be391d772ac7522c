// Package events is workgraph's event log (an outbox): every change a
// person or another system cares about appends one event in the
// transaction that makes the change, and readers (long polls, server-sent
// event streams, webhook delivery) follow the log by number.
//
// Numbers come from one database sequence, so writers never wait for each
// other to number their events; the price is that a number is taken before
// its transaction commits and numbers become visible out of order. A reader
// therefore never reads past a horizon (Horizon): a number below which
// every event is final, committed or rolled back. Read up to the horizon
// and resume after the last event seen, and no event is skipped or seen
// twice, whichever replica wrote it or serves the read.
package events

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/page"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/db/dbq"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// The event types. A type names what changed, then what happened to it.
const (
	ItemCreated      = "item.created"
	ItemUpdated      = "item.updated"
	ItemStateChanged = "item.state_changed" // payload: from, to
	LeaseGranted     = "lease.granted"
	LeaseEnded       = "lease.ended"   // payload: outcome
	LeaseRefused     = "lease.refused" // a stale or late call; payload: operation, kind
	AttentionOpened  = "attention.opened"
	AttentionAnswer  = "attention.answered"
	AttentionDismiss = "attention.dismissed"
	AttentionOverdue = "attention.overdue"
	PlanImported     = "plan.imported"
	TokenCreated     = "token.created"
	TokenRevoked     = "token.revoked"
)

// Types lists every event type, in the order the documentation gives them.
var Types = []string{
	ItemCreated, ItemUpdated, ItemStateChanged,
	LeaseGranted, LeaseEnded, LeaseRefused,
	AttentionOpened, AttentionAnswer, AttentionDismiss, AttentionOverdue,
	PlanImported, TokenCreated, TokenRevoked,
}

// KnownType reports whether t is one of Types.
func KnownType(t string) bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// SystemActor is the actor of changes no caller made (expiry, deadlines).
const SystemActor = "system"

// Event is one stored event.
type Event struct {
	Project     uuid.UUID
	Seq         int64
	Type        string
	At          time.Time
	Actor       string
	ItemID      *uuid.UUID
	LeaseID     *uuid.UUID
	AttentionID *uuid.UUID
	Payload     json.RawMessage
}

// Size is about how many bytes the event takes in a read's answer: its
// payload, actor and type as encoded there (page.TextSize,
// page.JSONSize), and page.RowOverhead for the rest (the byte budget of a
// page, page.MaxBytes).
func (e Event) Size() int {
	return page.RowOverhead + page.TextSize(e.Type) + page.TextSize(e.Actor) + page.JSONSize(e.Payload)
}

// New is an event to append. At nil: the database's clock (a test's stub
// clock passes its instant).
type New struct {
	Project     uuid.UUID
	Type        string
	At          *time.Time
	Actor       string
	ItemID      *uuid.UUID
	LeaseID     *uuid.UUID
	AttentionID *uuid.UUID
	// Payload is marshalled to a JSON object; nil is {}.
	Payload any
}

var q = dbq.New()

// Append writes e in q's transaction (pass the transaction of the change
// it reports, so that both commit or neither does) and returns its number.
func Append(ctx context.Context, tx db.DBTX, e New) (int64, error) {
	payload := json.RawMessage(`{}`)
	if e.Payload != nil {
		b, err := json.Marshal(e.Payload)
		if err != nil {
			return 0, err
		}
		payload = b
	}
	row, err := q.AppendEvent(ctx, tx, dbq.AppendEventParams{
		ProjectID: e.Project, EventType: e.Type, EventAt: e.At, Actor: e.Actor,
		ItemID: e.ItemID, LeaseID: e.LeaseID, AttentionID: e.AttentionID,
		Payload: payload,
	})
	if err != nil {
		return 0, db.Translate(err)
	}
	return row.Seq, nil
}

// settlePoll is how often Horizon looks whether the transactions it waits
// for have ended; they are short (workgraph's own writes), so the wait is
// usually one or two polls.
const settlePoll = 2 * time.Millisecond

// Horizon returns a number h such that every event numbered h or lower is
// final: it has committed (and is visible to any later snapshot) or never
// will. It reads the newest number taken, then the transactions of this
// database that are writing to the log (they hold the lock an insert into
// events takes before its trigger takes a number), and waits until those
// have ended: any event numbered up to h was written by one of them or is
// already visible. Transactions that write no event, and other databases
// of the cluster, never hold it back.
//
// Run it on a pool or connection, not inside a transaction that wrote
// events itself. It waits as long as the longest transaction writing events
// at the time runs (workgraph's own are short; a large plan import is the
// longest); ctx bounds the wait (the error is then ctx's).
func Horizon(ctx context.Context, conn db.DBTX) (int64, error) {
	last, err := q.EventsLastNumber(ctx, conn)
	if err != nil {
		return 0, db.Translate(err)
	}
	writers, err := q.EventsWriters(ctx, conn)
	if err != nil {
		return 0, db.Translate(err)
	}
	for len(writers) > 0 {
		running, err := q.EventsWritersRunning(ctx, conn, writers)
		if err != nil {
			return 0, db.Translate(err)
		}
		if !running {
			break
		}
		t := time.NewTimer(settlePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
	}
	return last, nil
}

// Filter selects events of a read.
type Filter struct {
	// After: only events numbered above it (0: from the start).
	After int64
	// UpTo: only events numbered at most it, a horizon from Horizon.
	UpTo int64
	// Types: only these types (empty: all).
	Types []string
	// ItemID: only this item's events (nil: all).
	ItemID *uuid.UUID
	// Limit: at most this many (1..MaxLimit; 0: DefaultLimit).
	Limit int
}

// Read bounds.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// LimitOrDefault is the number of events a read of f returns at most.
func (f Filter) LimitOrDefault() int {
	if f.Limit == 0 {
		return DefaultLimit
	}
	return f.Limit
}

func (f Filter) limit() (int32, error) {
	for _, t := range f.Types {
		if !KnownType(t) {
			return 0, wgerr.InvalidField("types", "unknown event type %q", t)
		}
	}
	if f.Limit < 0 || f.Limit > MaxLimit {
		return 0, wgerr.InvalidField("limit", "must be between 1 and %d", MaxLimit)
	}
	return int32(f.LimitOrDefault()), nil
}

// types is f.Types for a query (never nil: the query's empty array means
// every type).
func (f Filter) types() []string {
	if f.Types == nil {
		return []string{}
	}
	return f.Types
}

func fromRows(rows []dbq.ListEventsRow) []Event {
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{Project: r.ProjectID, Seq: r.Seq, Type: r.Type, At: r.At, Actor: r.Actor,
			ItemID: r.ItemID, LeaseID: r.LeaseID, AttentionID: r.AttentionID, Payload: r.Payload}
	}
	return out
}

// List returns project's events matching f, oldest first. f.UpTo must come
// from Horizon for the read to be gap-free.
func List(ctx context.Context, conn db.DBTX, project uuid.UUID, f Filter) ([]Event, error) {
	n, err := f.limit()
	if err != nil {
		return nil, err
	}
	rows, err := q.ListEvents(ctx, conn, dbq.ListEventsParams{
		ProjectID: project, After: f.After, UpTo: f.UpTo, Types: f.types(), ItemID: f.ItemID, MaxRows: n,
	})
	if err != nil {
		return nil, db.Translate(err)
	}
	return fromRows(rows), nil
}

// ListAll is List over every project (an admin's stream); f.ItemID is
// ignored.
func ListAll(ctx context.Context, conn db.DBTX, f Filter) ([]Event, error) {
	n, err := f.limit()
	if err != nil {
		return nil, err
	}
	rows, err := q.ListEventsAllProjects(ctx, conn, dbq.ListEventsAllProjectsParams{
		After: f.After, UpTo: f.UpTo, Types: f.types(), MaxRows: n,
	})
	if err != nil {
		return nil, db.Translate(err)
	}
	same := make([]dbq.ListEventsRow, len(rows))
	for i, r := range rows {
		same[i] = dbq.ListEventsRow(r)
	}
	return fromRows(same), nil
}
