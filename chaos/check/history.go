package check

import (
	"encoding/json"
	"time"
)

// Answer classifies what a client learned from an operation.
type Answer string

// The answers an operation can end with.
const (
	// Acked: a 2xx answer; the operation took effect.
	Acked Answer = "acked"
	// Refused: a 4xx answer with a problem code; the operation changed nothing.
	Refused Answer = "refused"
	// Unknown: no answer (transport error, timeout) or a 5xx after every
	// retry; the operation may or may not have taken effect.
	Unknown Answer = "unknown"
)

// Operation kinds.
const (
	OpClaim     = "claim"
	OpHeartbeat = "heartbeat"
	OpComplete  = "complete"
	OpRelease   = "release"
	OpFail      = "fail"
	OpAsk       = "ask"
	OpCreate    = "create"
	OpResolve   = "resolve"
	OpList      = "list"
)

// outcomeOf maps a lease-ending operation to the outcome it stores.
var outcomeOf = map[string]string{
	OpComplete: "completed",
	OpRelease:  "released",
	OpFail:     "failed",
	OpAsk:      "attention_requested",
}

// Attempt is one HTTP exchange of an operation (an operation is retried
// with the same Idempotency-Key while its outcome is unknown).
type Attempt struct {
	Replica int
	At      time.Time // when the answer (or the error) arrived
	Status  int       // 0: no answer
	Code    string    // the problem's code
	Detail  string    // the problem's detail
}

// Op is one client operation as the client saw it. Times are the suite's
// own clock (monotonic), used only to order operations among themselves.
type Op struct {
	ID     int
	Worker string
	Kind   string
	// Stale marks a deliberate replay (an old lease id/epoch after a
	// takeover, or a wrong epoch): the checker does not trust the mark, it
	// derives staleness from the history itself.
	Stale  bool
	Key    string // Idempotency-Key
	Invoke time.Time
	Return time.Time
	// Attempts, in order; the last one decides Answer.
	Attempts []Attempt
	Answer   Answer
	Code     string // the refusal's code

	// The request: the lease and epoch presented, the result sent.
	Lease  string
	Epoch  int64
	Item   string // the lease's item (known to the worker), or the claim's item
	Result string // a completion's result (JSON text)
	TTL    int    // a claim's lease_seconds

	// A claim's or heartbeat's answer. GotExpires is the lease's expiry
	// the server answered (the database's clock, which on the suite's one
	// host is the same clock as Invoke and Return).
	GotLease   string
	GotEpoch   int64
	GotExpires time.Time
	Replayed   bool
}

// Lease is a row of the server's leases table.
type Lease struct {
	ID         string
	Seq        int64
	Item       string
	Epoch      int64
	Worker     string
	AcquiredAt time.Time
	ExpiresAt  time.Time
	EndedAt    *time.Time
	Outcome    *string
	Result     json.RawMessage
	Heartbeats int
}

// Item is a row of the server's items table.
type Item struct {
	ID        string
	Status    string // open, done, cancelled
	Epoch     int64
	Ready     bool
	DependsOn []string
}

// Event is a row of the server's event log about a lease or an item
// (lease.granted, lease.ended, item.created), as the checker reads it.
type Event struct {
	Seq     int64
	Type    string
	Lease   string // lease events: the lease id
	Item    string
	Epoch   int64  // lease events: the payload's epoch
	Outcome string // lease.ended: the payload's outcome
}

// Ended is what an ended lease looked like when a snapshot was taken.
type Ended struct {
	EndedAt time.Time
	Outcome string
	Result  string
}

// Fault is one injected fault: from Start until Healed (the moment every
// replica answered ready again after the fault was removed).
type Fault struct {
	Kind    string
	Target  string // a replica, the link, the database
	Start   time.Time
	End     time.Time // the fault removed
	Healed  time.Time // every replica ready again; zero: never
	DBFault bool      // the database (or the link to it) was affected: only then is a 503 allowed
}

// History is everything one scenario recorded.
type History struct {
	Ops    []Op
	Leases []Lease
	Items  []Item
	// Events are the project's lease.granted, lease.ended and item.created
	// events, read from the event log after the run.
	Events []Event
	Faults []Fault
	// Snapshots of the ended leases taken during the run, to show that an
	// ended lease is never rewritten.
	Snapshots []map[string]Ended
	// AppendOnly is the error the database gave to an attempt to rewrite an
	// ended lease (nil: the rewrite was accepted, a violation). Empty
	// AppendOnlyTried means it was not tried.
	AppendOnlyTried bool
	AppendOnlyErr   error
	// TTL is the lease_seconds every claim asked for.
	TTL int
	// Stuck lists the items that were neither finished nor claimable when
	// the drain deadline passed (filled by the runner from the database).
	Stuck []string
	// Grace extends each fault's window for the 503s it may cause.
	Grace time.Duration
	// StuckKeyAfter: an Idempotency-Key still "being processed" this long
	// after the operation was first sent is stuck.
	StuckKeyAfter time.Duration
	// ReadyBound: a replica must answer ready within this long of a
	// fault's removal.
	ReadyBound time.Duration
}
