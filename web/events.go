package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// DefaultPageBeat is how often an idle page stream sends a comment when
// Deps.EventsHeartbeat is 0.
const DefaultPageBeat = 15 * time.Second

// streamReadTimeout bounds each database read of a page stream (where it
// starts, a step of events, the session read again): a read is never
// bounded by the heartbeat, whose deadline only ends the wait for events.
const streamReadTimeout = 10 * time.Second

// pageEvent is what a page learns of an event: enough to know what to
// fetch again, nothing a page does not already show.
type pageEvent struct {
	Seq         int64   `json:"seq"`
	Type        string  `json:"type"`
	ItemID      *string `json:"item_id"`
	AttentionID *string `json:"attention_id"`
}

// eventStream serves /p/:project/events/stream, the project's events as
// server-sent events for app.js, which fetches the page again on each
// (the pages themselves stay plain HTML). It starts at the current
// horizon (or after Last-Event-ID, when the browser reconnects) and ends
// when the server shuts down or the session ends (signed out, expired, its
// token revoked): the session is read again before each page of events
// and each keep-alive, so nothing written after it ended is sent. It
// sends a keep-alive every Deps.EventsHeartbeat while idle, and drops a
// reader that has not taken a write within Deps.EventsStall (two
// heartbeats unless set).
func (u *ui) eventStream(r *req) error {
	p := r.project.ID
	return u.streamEvents(r, &p, nil)
}

// allEventStream serves /events/stream, what the all-projects inbox
// follows: for an admin (who may see every project) the attention events
// of all projects (what changes an inbox; the rest of a busy fleet's
// events would only make the page read every project again); anyone else:
// not found.
func (u *ui) allEventStream(r *req) error {
	if !r.sess.Principal.IsAdmin() {
		return r.fail(http.StatusNotFound, "Not found", "There is no such page.")
	}
	return u.streamEvents(r, nil, []string{events.AttentionOpened, events.AttentionAnswer, events.AttentionDismiss, events.AttentionOverdue})
}

// streamEvents streams the events of project (nil: of every project) of
// types (nil: all) as eventStream says.
func (u *ui) streamEvents(r *req, p *uuid.UUID, types []string) error {
	if u.Events == nil {
		return r.fail(http.StatusNotFound, "Not found", "This server does not stream events.")
	}
	ctx := r.ctx()
	// Pages learn little of each event: read the most a read may give.
	f := events.Filter{Types: types, Limit: events.MaxLimit}
	first, answered, err := u.streamStart(r, p, f)
	if answered {
		return err
	}
	beat := u.EventsHeartbeat
	if beat <= 0 {
		beat = DefaultPageBeat
	}
	stallAfter := u.EventsStall
	if stallAfter <= 0 {
		stallAfter = 2 * beat
	}
	w := r.Response()
	// No write timeout for the stream as a whole; each write must be
	// taken within stallAfter, or the reader (which stopped reading) is
	// dropped.
	rc := http.NewResponseController(w)
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return r.error(err)
	}
	// A connection's deadline is the machine's clock (the kernel's),
	// whatever clock the pages show times against.
	stall := func() { _ = rc.SetWriteDeadline(clock.System().Add(stallAfter)) }
	stall()
	// dropped ends the stream after a failed write: a reader gone, or one
	// that stopped reading (its write waited stallAfter: said in the log,
	// so that an operator can tell a stalled reader from a closed one).
	dropped := func(err error) error {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			u.Logger.InfoContext(ctx, "page event stream dropped: its reader stopped reading", "wait", stallAfter)
		}
		return nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	defer u.Metrics.StreamOpened()()
	fmt.Fprint(w, "retry: 2000\n\n")
	w.Flush()
	// The heartbeat counts from the last write to the reader: other
	// projects' events (and, on the all-projects stream, the types it
	// leaves out) wake the stream without giving it anything to send.
	lastWrite := clock.System()
	page, seen := first, first.Horizon
	for fresh := true; ; fresh = false {
		if !fresh {
			if !clock.System().Before(lastWrite.Add(beat)) {
				if !r.stillSignedIn() {
					return nil
				}
				stall()
				// The keep-alive names the stream's position, as the
				// API's does: every event it selects up to f.After was
				// sent, so a browser reconnecting resumes from there.
				if _, err := fmt.Fprintf(w, "id: %d\n: keep-alive\n\n", f.After); err != nil {
					return dropped(err)
				}
				w.Flush()
				lastWrite = clock.System()
			}
			// Only the wait ends at the next keep-alive; the read that
			// follows has its own bound, however late in the wait the
			// log moved (a read cut at the keep-alive would be thrown
			// away, and on a loaded server, every read).
			wait, cancel := context.WithDeadline(ctx, lastWrite.Add(beat))
			h, err := u.Events.Wait(wait, seen)
			cancel()
			switch {
			case ctx.Err() != nil || errors.Is(err, events.ErrStopped):
				return nil
			case errors.Is(err, context.DeadlineExceeded):
				continue
			}
			if page, err = u.streamStep(ctx, p, f, h); err != nil {
				if ctx.Err() == nil {
					u.Logger.WarnContext(ctx, "page event stream ended", "err", err)
				}
				return nil
			}
			if len(page.Events) > 0 && !r.stillSignedIn() {
				return nil
			}
		}
		stall()
		for _, e := range page.Events {
			b, _ := json.Marshal(pageEvent{Seq: e.Seq, Type: e.Type, ItemID: idString(e.ItemID), AttentionID: idString(e.AttentionID)})
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b); err != nil {
				return dropped(err)
			}
		}
		w.Flush()
		if len(page.Events) > 0 {
			lastWrite = clock.System()
		}
		f.After, seen = page.Next, page.Horizon
		if page.More() {
			seen = page.Horizon - 1 // more below the same horizon: read again at once
		}
	}
}

// streamStep reads the events f selects up to h, a horizon the stream
// waited for, within streamReadTimeout.
func (u *ui) streamStep(ctx context.Context, p *uuid.UUID, f events.Filter, h int64) (events.Page, error) {
	ctx, cancel := context.WithTimeout(ctx, streamReadTimeout)
	defer cancel()
	return u.Events.Step(ctx, p, f, h)
}

// streamStart reads where a page's stream starts: after Last-Event-ID (a
// browser reconnecting) or else ?after= (a page opened at an event it has
// shown), with the events since then up to the horizon, as the API's
// streams do; with neither, at the current horizon (nothing to send yet).
// A number that is not an event number, or past the log, is 400; one below
// the retention horizon starts at the current horizon instead (the page
// fetches itself again when its stream opens, so it misses nothing a
// resumed read could still give). answered says an error page was written
// instead (err is the handler's to return).
func (u *ui) streamStart(r *req, p *uuid.UUID, f events.Filter) (first events.Page, answered bool, err error) {
	ctx, cancel := context.WithTimeout(r.ctx(), streamReadTimeout)
	defer cancel()
	name, value := "Last-Event-ID", strings.TrimSpace(r.Request().Header.Get("Last-Event-ID"))
	if value == "" {
		name, value = "after", r.QueryParam("after")
	}
	if value != "" {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return first, true, r.fail(http.StatusBadRequest, "Bad request", name+" must be an event number (an integer >= 0).")
		}
		f.After = n
		first, err = u.Events.Read(ctx, p, f)
		switch {
		case err == nil:
			return first, false, nil
		case wgerr.CodeOf(err) == wgerr.CodeInvalid:
			return first, true, r.fail(http.StatusBadRequest, "Bad request",
				fmt.Sprintf("%s %d is past the event log: open the page again to follow it from now.", name, n))
		case wgerr.CodeOf(err) != wgerr.CodeEventsPruned:
			return first, true, r.error(err)
		}
	}
	h, err := u.Events.Horizon(ctx)
	if err != nil {
		return first, true, r.error(err)
	}
	return events.Page{Next: h, Horizon: h}, false, nil
}

// stillSignedIn reads the request's session again: false when it has
// ended (or cannot be read: the browser reconnects once it can).
func (r *req) stillSignedIn() bool {
	ctx, cancel := context.WithTimeout(r.ctx(), streamReadTimeout)
	defer cancel()
	_, ok, err := r.ui.Sessions.Lookup(ctx, r.sessID)
	return ok && err == nil
}

func idString(id *uuid.UUID) *string {
	if id == nil {
		return nil
	}
	s := id.String()
	return &s
}
