package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
	"github.com/workgraph-dev/workgraph/page"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// Reader reads the log for the API and the web UI: one read up to the
// horizon, or a wait for the first matching event (a long poll, a stream).
type Reader struct {
	conn     db.DBTX
	follower *Follower
}

// NewReader reads on conn (a pool: no connection is held while waiting)
// and waits on follower (nil: a read never waits).
func NewReader(conn db.DBTX, follower *Follower) *Reader {
	return &Reader{conn: conn, follower: follower}
}

// Page is one read of the log.
type Page struct {
	// Events matching the filter, oldest first.
	Events []Event
	// Next is where the next read resumes (its Filter.After): the last
	// event's number when the page is full, else the horizon read up to,
	// which no later event can be at or below.
	Next int64
	// Horizon is the horizon the page was read up to.
	Horizon int64
}

// More reports whether events the filter selects may follow the page
// below its horizon: the page was full (its limit), or cut by the byte
// budget (page.MaxBytes), before the horizon. Read again from Next at
// once rather than wait for the log to move.
func (p Page) More() bool { return p.Next < p.Horizon }

// Read returns the events of project (nil: of every project) after
// f.After up to the current horizon; f.UpTo is ignored. Errors:
// invalid_argument for a bad filter, or an f.After past the horizon (a
// number the log has not reached: no read handed it out, and waiting for
// it would skip every event up to it); events_pruned (ErrPruned) for an
// f.After other than 0 below the retention horizon (the read would skip
// deleted events); unavailable when the database is.
func (r *Reader) Read(ctx context.Context, project *uuid.UUID, f Filter) (Page, error) {
	if _, err := f.limit(); err != nil {
		return Page{}, err
	}
	h, err := r.observed().horizon(ctx, r.conn)
	if err != nil {
		return Page{}, err
	}
	if f.After > h {
		return Page{}, wgerr.InvalidField("after",
			"%d is past the event log, whose newest number is %d: resume from a number this server answered (an event's seq, next_after), or leave after out to start now", f.After, h)
	}
	return r.readChecked(ctx, project, f, h)
}

// ReadTo is Read up to a horizon h the caller already has (the rest of
// a full page); it is refused with ErrPruned as Read is.
func (r *Reader) ReadTo(ctx context.Context, project *uuid.UUID, f Filter, h int64) (Page, error) {
	if _, err := f.limit(); err != nil {
		return Page{}, err
	}
	return r.readChecked(ctx, project, f, h)
}

// readChecked is readTo, refused with ErrPruned when f.After is below the
// retention horizon. The horizon is read after the events: retention
// raises it in the statement that deletes, so a deletion the read missed
// events to has committed before the read's snapshot, and the horizon
// read after it sees it. A step of a stream (Step) is not checked: it
// reads past the previous step's horizon, events committed moments ago,
// which the retention (a day at least) never deletes.
func (r *Reader) readChecked(ctx context.Context, project *uuid.UUID, f Filter, h int64) (Page, error) {
	p, err := r.readTo(ctx, project, f, h)
	if err != nil || f.After == 0 {
		return p, err
	}
	through, err := PrunedThrough(ctx, r.conn, project)
	if err != nil {
		return Page{}, err
	}
	if f.After < through {
		return Page{}, ErrPruned(f.After, through)
	}
	return p, nil
}

// PrunedThrough is the retention horizon of project's events (nil: of
// every project's): the newest number the retention has deleted (0:
// none). A read after a smaller number may miss deleted events.
func PrunedThrough(ctx context.Context, conn db.DBTX, project *uuid.UUID) (int64, error) {
	var n int64
	var err error
	if project == nil {
		n, err = q.EventsPrunedThroughAll(ctx, conn)
	} else {
		n, err = q.EventsPrunedThrough(ctx, conn, *project)
	}
	return n, db.Translate(err)
}

// ErrPruned is the events_pruned error of a read resumed after number
// after, below the retention horizon through: its details name the
// horizon (pruned_through), after which the kept events follow.
func ErrPruned(after, through int64) error {
	return &wgerr.Error{Code: wgerr.CodeEventsPruned, Field: "after",
		Message: fmt.Sprintf("after: events after %d up to %d were deleted by the retention (--events-retention): resume after %d (pruned_through) to read the events kept, or leave after out to start from the oldest kept", after, through, through),
		Details: map[string]any{"pruned_through": through}}
}

func (r *Reader) readTo(ctx context.Context, project *uuid.UUID, f Filter, h int64) (Page, error) {
	f.UpTo = h
	// The events in chunks (page.Read), each after the last event of the
	// one before, until the page's limit or its byte budget is full: a
	// page of events learns that more follow from being full, not from
	// one more event, so Read's limit+1 rows are limit here. Events up to
	// the horizon do not change between chunks; the retention's deletions
	// meanwhile are refused by readChecked, which reads its horizon after
	// every chunk.
	evs, err := page.Read(f.LimitOrDefault()-1, func(last *Event, n int) ([]Event, error) {
		g := f
		g.Limit = n
		if last != nil {
			g.After = last.Seq
		}
		if project == nil {
			return ListAll(ctx, r.conn, g)
		}
		return List(ctx, r.conn, *project, g)
	}, Event.Size)
	if err != nil {
		return Page{}, err
	}
	p := Page{Events: evs, Next: max(f.After, h), Horizon: h}
	if n := page.Fit(len(evs), func(i int) int { return evs[i].Size() }); n < len(evs) {
		// Cut by the byte budget: resume after the last event sent.
		p.Events, p.Next = evs[:n], evs[n-1].Seq
	} else if len(evs) == f.LimitOrDefault() {
		// More may follow below the horizon: resume after the last one.
		p.Next = evs[len(evs)-1].Seq
	}
	return p, nil
}

// ReadWait is Read that, when no event matches yet, waits up to wait for
// the first one and returns as soon as one is there (an empty page when
// none came in time, or the follower stopped). Only the waits end with
// wait: a read that follows a wait is bounded by ctx alone.
func (r *Reader) ReadWait(ctx context.Context, project *uuid.UUID, f Filter, wait time.Duration) (Page, error) {
	p, err := r.Read(ctx, project, f)
	if err != nil || len(p.Events) > 0 || wait <= 0 || r.follower == nil {
		return p, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		h, err := r.Wait(waitCtx, p.Horizon)
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrStopped):
			return p, nil
		case err != nil:
			return Page{}, err
		}
		if p, err = r.Step(ctx, project, Filter{After: p.Next, Types: f.Types, ItemID: f.ItemID, Limit: f.Limit}, h); err != nil {
			return Page{}, err
		}
		if len(p.Events) > 0 {
			return p, nil
		}
	}
}

// Wait blocks until the horizon passes seen (the Horizon of the caller's
// last page) and returns it: the wait of one step of a stream, which
// Step then reads. A caller bounds the wait (until its next keep-alive,
// the end of a long poll) apart from the read: a read under the wait's
// deadline is cut short whenever the horizon moves late in the wait, and
// on a loaded server, where a read takes longer than what is left of the
// wait, every step would be cut and none sent. Errors: ctx's, and
// ErrStopped (also when the reader has no follower).
func (r *Reader) Wait(ctx context.Context, seen int64) (int64, error) {
	if r.follower == nil {
		return 0, ErrStopped
	}
	return r.follower.Wait(ctx, seen)
}

// Step reads what f selects after f.After up to h, a horizon Wait
// returned: one step of a stream. It is not checked against the retention
// horizon (a step reads events committed moments ago, which the
// retention, a day at least, never deletes). Errors: Read's.
func (r *Reader) Step(ctx context.Context, project *uuid.UUID, f Filter, h int64) (Page, error) {
	return r.readTo(ctx, project, f, h)
}

// Horizon is the current horizon (Horizon on the reader's connection):
// where a stream that wants only events from now on begins.
func (r *Reader) Horizon(ctx context.Context) (int64, error) {
	return Horizon(ctx, r.conn)
}
