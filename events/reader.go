package events

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/db"
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

// Read returns the events of project (nil: of every project) after
// f.After up to the current horizon; f.UpTo is ignored. Errors:
// invalid_argument for a bad filter, or an f.After past the horizon (a
// number the log has not reached: no read handed it out, and waiting for
// it would skip every event up to it); unavailable when the database is.
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
	return r.readTo(ctx, project, f, h)
}

// ReadTo is Read up to a horizon h the caller already has (the rest of
// a full page).
func (r *Reader) ReadTo(ctx context.Context, project *uuid.UUID, f Filter, h int64) (Page, error) {
	if _, err := f.limit(); err != nil {
		return Page{}, err
	}
	return r.readTo(ctx, project, f, h)
}

func (r *Reader) readTo(ctx context.Context, project *uuid.UUID, f Filter, h int64) (Page, error) {
	f.UpTo = h
	var evs []Event
	var err error
	if project == nil {
		evs, err = ListAll(ctx, r.conn, f)
	} else {
		evs, err = List(ctx, r.conn, *project, f)
	}
	if err != nil {
		return Page{}, err
	}
	p := Page{Events: evs, Next: max(f.After, h), Horizon: h}
	if len(evs) == f.LimitOrDefault() {
		// More may follow below the horizon: resume after the last one.
		p.Next = evs[len(evs)-1].Seq
	}
	return p, nil
}

// ReadWait is Read that, when no event matches yet, waits up to wait for
// the first one and returns as soon as one is there (an empty page when
// none came in time, or the follower stopped).
func (r *Reader) ReadWait(ctx context.Context, project *uuid.UUID, f Filter, wait time.Duration) (Page, error) {
	p, err := r.Read(ctx, project, f)
	if err != nil || len(p.Events) > 0 || wait <= 0 || r.follower == nil {
		return p, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		p2, err := r.Next(ctx, project, Filter{After: p.Next, Types: f.Types, ItemID: f.ItemID, Limit: f.Limit}, p.Horizon)
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil, errors.Is(err, ErrStopped):
			return p, nil
		case err != nil:
			return Page{}, err
		}
		p = p2
		if len(p.Events) > 0 {
			return p, nil
		}
	}
}

// Next waits until the horizon passes seen (the Horizon of the caller's
// last page), then reads what f selects up to it: one step of a stream.
// Errors: ctx's, ErrStopped, and Read's.
func (r *Reader) Next(ctx context.Context, project *uuid.UUID, f Filter, seen int64) (Page, error) {
	if r.follower == nil {
		return Page{}, ErrStopped
	}
	h, err := r.follower.Wait(ctx, seen)
	if err != nil {
		return Page{}, err
	}
	return r.readTo(ctx, project, f, h)
}

// Horizon is the current horizon (Horizon on the reader's connection):
// where a stream that wants only events from now on begins.
func (r *Reader) Horizon(ctx context.Context) (int64, error) {
	return Horizon(ctx, r.conn)
}
