package web

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

	"github.com/workgraph-dev/workgraph/events"
)

// pageBeat is how often an idle page stream sends a comment.
const pageBeat = 15 * time.Second

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
// when the server shuts down, or when the session has ended (checked
// before each page of events and each keep-alive).
func (u *ui) eventStream(r *req) error {
	if u.Events == nil {
		return r.fail(http.StatusNotFound, "Not found", "This server does not stream events.")
	}
	ctx := r.ctx()
	p := r.project.ID
	var after int64
	if last := strings.TrimSpace(r.Request().Header.Get("Last-Event-ID")); last != "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return r.fail(http.StatusBadRequest, "Bad request", "Last-Event-ID must be an event number.")
		}
		after = n
	} else {
		start, cancel := context.WithTimeout(ctx, 10*time.Second)
		h, err := u.Events.Horizon(start)
		cancel()
		if err != nil {
			return r.error(err)
		}
		after = h
	}
	w := r.Response()
	if err := http.NewResponseController(w).SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return r.error(err)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	w.Flush()
	f := events.Filter{After: after}
	seen := after
	for {
		wait, cancel := context.WithTimeout(ctx, pageBeat)
		page, err := u.Events.Next(wait, &p, f, seen)
		cancel()
		switch {
		case ctx.Err() != nil || errors.Is(err, events.ErrStopped):
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			if !r.stillSignedIn() {
				return nil
			}
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			w.Flush()
			continue
		case err != nil:
			u.Logger.WarnContext(ctx, "page event stream ended", "err", err)
			return nil
		}
		if len(page.Events) > 0 && !r.stillSignedIn() {
			return nil
		}
		for _, e := range page.Events {
			b, _ := json.Marshal(pageEvent{Seq: e.Seq, Type: e.Type, ItemID: idString(e.ItemID), AttentionID: idString(e.AttentionID)})
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b); err != nil {
				return nil
			}
		}
		w.Flush()
		f.After, seen = page.Next, page.Horizon
		if len(page.Events) == f.LimitOrDefault() {
			seen = page.Horizon - 1 // more below the same horizon: read again at once
		}
	}
}

// stillSignedIn reports whether the request's session still lives (not
// signed out, expired, or ended by its token's revocation): a stream that
// stays open checks it before each page of events and each keep-alive. A
// session that cannot be checked (the database is down) ends the stream
// too; the browser reconnects.
func (r *req) stillSignedIn() bool {
	ctx, cancel := context.WithTimeout(r.ctx(), 10*time.Second)
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
