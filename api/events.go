package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/workgraph-dev/workgraph/events"
	"github.com/workgraph-dev/workgraph/metrics"
	"github.com/workgraph-dev/workgraph/wgerr"
	"github.com/workgraph-dev/workgraph/wire"
)

// DefaultStreamHeartbeat is how often an idle event stream sends a comment,
// so proxies and clients see the connection alive.
const DefaultStreamHeartbeat = 15 * time.Second

// streamRetry is the reconnection delay an event stream asks of browsers
// (the SSE retry field).
const streamRetry = 2 * time.Second

// anyRoleWait: readable by every role of the project, with its own
// deadline (a long poll, a stream).
var (
	anyRoleWait   = routeOpts{roles: anyRole.roles, selfTimeout: true}
	adminOnlyWait = routeOpts{selfTimeout: true}
)

func (a *API) mountEvents(e *echo.Echo) {
	a.handle(e, http.MethodGet, "/projects/:project/events", a.listEvents, anyRoleWait)
	a.handle(e, http.MethodGet, "/projects/:project/events/stream", a.streamEvents, anyRoleWait)
	a.handle(e, http.MethodGet, "/events", a.listEvents, adminOnlyWait)
	a.handle(e, http.MethodGet, "/events/stream", a.streamEvents, adminOnlyWait)
}

// eventsScope is the project of an events route: the path's, or nil on
// the admin routes over every project.
func (a *API) eventsScope(c echo.Context) (*uuid.UUID, error) {
	if c.Param("project") == "" {
		return nil, nil
	}
	p, err := a.project(c)
	if err != nil {
		return nil, err
	}
	return &p.ID, nil
}

// eventsFilter reads after, types, item_id (project routes) and limit.
func eventsFilter(c echo.Context) (events.Filter, error) {
	var f events.Filter
	var err error
	if f.After, err = afterParam("after", c.QueryParam("after")); err != nil {
		return f, err
	}
	given := c.QueryParams()["types"]
	for _, v := range given {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			if !events.KnownType(t) {
				return f, wgerr.InvalidField("types", "unknown event type %q (known: %s)", t, strings.Join(events.Types, ", "))
			}
			f.Types = append(f.Types, t)
		}
	}
	// A list that names no type (",", " , ") is as empty as ?types=: nil
	// Types would be every event, the opposite of a filter.
	if len(given) > 0 && len(f.Types) == 0 {
		return f, wgerr.InvalidField("types", "names no event type (leave the parameter out to have every type)")
	}
	if c.Param("project") != "" {
		if f.ItemID, err = queryID(c, "item_id"); err != nil {
			return f, err
		}
	}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > events.MaxLimit {
			return f, wgerr.InvalidField("limit", "must be an integer between 1 and %d, got %q", events.MaxLimit, s)
		}
		f.Limit = n
	}
	return f, nil
}

// afterParam parses an event number to resume after (empty: 0).
func afterParam(name, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, wgerr.InvalidField(name, "must be an event number (an integer >= 0), got %q", s)
	}
	return n, nil
}

// eventsParams are the query parameters of the events routes: after,
// types, item_id (project routes) and more.
func eventsParams(c echo.Context, more ...string) []string {
	known := []string{"after", "types"}
	if c.Param("project") != "" {
		known = append(known, "item_id")
	}
	return append(known, more...)
}

// listEvents: the events after ?after= (types=a,b, item_id=, limit=
// 1..1000), oldest first, up to the horizon; with wait_seconds (0..60) a
// long poll that answers as soon as one matching event exists.
func (a *API) listEvents(c echo.Context) error {
	if err := onlyQuery(c, eventsParams(c, "limit", "wait_seconds")...); err != nil {
		return err
	}
	f, err := eventsFilter(c)
	if err != nil {
		return err
	}
	var wait time.Duration
	if s := c.QueryParam("wait_seconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > MaxWaitSeconds {
			return wgerr.InvalidField("wait_seconds", "must be an integer between 0 and %d, got %q", MaxWaitSeconds, s)
		}
		wait = time.Duration(n) * time.Second
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), wait+a.timeout)
	defer cancel()
	c.SetRequest(c.Request().WithContext(ctx))
	scope, err := a.eventsScope(c)
	if err != nil {
		return err
	}
	page, err := a.svc.Events.ReadWait(ctx, scope, f, wait)
	if err != nil {
		return err
	}
	if wait > 0 && len(page.Events) > 0 {
		// The token may have been revoked while the poll waited.
		if err := a.reverify(c); err != nil {
			return err
		}
	}
	a.metrics.EventsSent(metrics.EventsPoll, len(page.Events))
	return c.JSON(http.StatusOK, wire.EventPage{Events: eventViews(page.Events), NextAfter: page.Next})
}

// streamEvents: a server-sent event stream of the events after
// Last-Event-ID (else ?after=), filtered as listEvents, each once and in
// order: "id: <seq>", "event: <type>", "data: <Event JSON>". It sends a
// comment every heartbeat while idle, drops a reader that has not taken a
// write within the stall timeout (Config.StreamStall), and ends when the server shuts down
// or the database fails (the client resumes with Last-Event-ID), and when
// its token is no longer valid: the token is read again before each
// page of events and each heartbeat is sent, so a revoked token is sent
// nothing written after its revocation.
func (a *API) streamEvents(c echo.Context) error {
	// No limit: a stream sends every event, in pages of its own size.
	if err := onlyQuery(c, eventsParams(c)...); err != nil {
		return err
	}
	f, err := eventsFilter(c)
	if err != nil {
		return err
	}
	fromHeader := false
	if last := c.Request().Header.Get("Last-Event-ID"); last != "" {
		if f.After, err = afterParam("Last-Event-ID", strings.TrimSpace(last)); err != nil {
			return err
		}
		fromHeader = true
	}
	ctx := c.Request().Context()
	scope, err := a.eventsScope(c)
	if err != nil {
		return err
	}
	// The first read answers errors (bad filter, database down) as
	// problems, before the stream begins.
	first, err := a.readBounded(ctx, scope, f)
	if err != nil && fromHeader {
		return renameFields(err, map[string]string{"after": "Last-Event-ID"})
	}
	if err != nil {
		return err
	}
	w := c.Response()
	// A stream outlives the server's write timeout; instead each write
	// must be taken within the stall timeout: a reader that stopped
	// reading (its connection's buffers full) is dropped then, and resumes
	// with Last-Event-ID when it reads again.
	rc := http.NewResponseController(w)
	stall := func() {
		_ = rc.SetWriteDeadline(time.Now().Add(a.streamStall))
	}
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	stall()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	defer a.metrics.StreamOpened()()
	fmt.Fprintf(w, "retry: %d\n\n", streamRetry.Milliseconds())
	// The heartbeat counts from the last write to the reader, not from
	// the last change of the log: events the stream does not send
	// (another project's, types its filter leaves out) wake it without
	// writing anything, and on a busy server would never let an idle
	// reader hear from it.
	lastWrite := time.Now()
	page := first
	for verified := true; ; verified = false {
		// The first page was read with the token just verified.
		if len(page.Events) > 0 && !verified && !a.stillValid(c) {
			return nil
		}
		stall()
		if err := writeEvents(w, page.Events); err != nil {
			return nil // the client went away, or stopped reading
		}
		a.metrics.EventsSent(metrics.EventsStream, len(page.Events))
		w.Flush()
		if len(page.Events) > 0 {
			lastWrite = time.Now()
		}
		f.After = page.Next
		if page.More() {
			// A full page (its limit or its bytes): more lie below the
			// same horizon.
			if page, err = a.readTo(ctx, scope, f, page.Horizon); err != nil {
				return a.endStream(c, err)
			}
			continue
		}
		seen := page.Horizon
		for {
			if !time.Now().Before(lastWrite.Add(a.streamBeat)) {
				if !a.stillValid(c) {
					return nil
				}
				stall()
				// The keep-alive names the stream's position: every
				// event the filter selects up to f.After was sent, so a
				// reconnection resumes from there (EventSource and the
				// Go client take an id with no data as Last-Event-ID)
				// instead of from its last matching event, which may be
				// long ago (read again, or aged out of the log: 410).
				if _, err := fmt.Fprintf(w, "id: %d\n: keep-alive\n\n", f.After); err != nil {
					return nil
				}
				w.Flush()
				lastWrite = time.Now()
			}
			// Only the wait ends at the next keep-alive; the read that
			// follows is bounded by the request timeout, however late in
			// the wait the log moved (a read cut at the keep-alive would
			// be thrown away, and on a loaded server, every read).
			wait, cancel := context.WithDeadline(ctx, lastWrite.Add(a.streamBeat))
			var h int64
			h, err = a.svc.Events.Wait(wait, seen)
			cancel()
			if err == nil {
				page, err = a.step(ctx, scope, f, h)
				break
			}
			if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
				break
			}
		}
		if err != nil {
			return a.endStream(c, err)
		}
	}
}

// stillValid reads the token of a stream's request again: false when it
// was revoked since (or cannot be read: the client resumes once it can).
func (a *API) stillValid(c echo.Context) bool { return a.reverify(c) == nil }

// reverify reads the token of a request that has waited again: the
// errors of authenticate (unauthenticated once revoked).
func (a *API) reverify(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), a.timeout)
	defer cancel()
	bearer, err := bearerOf(c)
	if err != nil {
		return err
	}
	_, err = a.auth.Authenticate(ctx, bearer)
	return err
}

// readBounded is a first read, bounded by the request timeout.
func (a *API) readBounded(ctx context.Context, scope *uuid.UUID, f events.Filter) (events.Page, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	return a.svc.Events.Read(ctx, scope, f)
}

// readTo reads the rest of a full page's horizon, bounded by the request
// timeout.
func (a *API) readTo(ctx context.Context, scope *uuid.UUID, f events.Filter, h int64) (events.Page, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	return a.svc.Events.ReadTo(ctx, scope, f, h)
}

// step reads one step of a stream up to h, a horizon it waited for,
// bounded by the request timeout.
func (a *API) step(ctx context.Context, scope *uuid.UUID, f events.Filter, h int64) (events.Page, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	return a.svc.Events.Step(ctx, scope, f, h)
}

// endStream ends a stream that has begun: an error can no longer be a
// problem answer; it is logged unless the client left or the server
// stops.
func (a *API) endStream(c echo.Context, err error) error {
	if c.Request().Context().Err() == nil && !errors.Is(err, events.ErrStopped) {
		a.log.WarnContext(c.Request().Context(), "event stream ended", "err", err)
	}
	return nil
}

// writeEvents writes evs as server-sent events.
func writeEvents(w http.ResponseWriter, evs []events.Event) error {
	for _, e := range evs {
		b, err := json.Marshal(eventView(e))
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b); err != nil {
			return err
		}
	}
	return nil
}

func eventView(e events.Event) wire.Event {
	return wire.Event{ProjectID: e.Project.String(), Seq: e.Seq, Type: e.Type, At: e.At, Actor: e.Actor,
		ItemID: optID(e.ItemID), LeaseID: optID(e.LeaseID), AttentionID: optID(e.AttentionID),
		Payload: rawOrNull(e.Payload)}
}

func eventViews(evs []events.Event) []wire.Event {
	out := make([]wire.Event, len(evs))
	for i, e := range evs {
		out[i] = eventView(e)
	}
	return out
}
