package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/workgraph-dev/workgraph/wire"
)

type (
	// Event is one entry of the event log.
	Event = wire.Event
	// EventPage is one read of the log; NextAfter resumes it.
	EventPage = wire.EventPage
)

// EventsQuery selects events of GET /v1/projects/{p}/events.
type EventsQuery struct {
	// After: only events numbered above it (a previous NextAfter).
	After int64
	// Types: only these event types (empty: all).
	Types []string
	// ItemID: only this item's events.
	ItemID string
	// Limit: at most this many (0: the server's default, 100).
	Limit int
	// Wait: when nothing matches yet, wait up to this long (whole seconds,
	// at most 60) for the first event.
	Wait time.Duration
}

func (q EventsQuery) values(stream bool) map[string][]string {
	v := map[string][]string{}
	if q.After > 0 && !stream {
		v["after"] = []string{strconv.FormatInt(q.After, 10)}
	}
	if len(q.Types) > 0 {
		v["types"] = []string{strings.Join(q.Types, ",")}
	}
	if q.ItemID != "" {
		v["item_id"] = []string{q.ItemID}
	}
	if q.Limit > 0 && !stream {
		v["limit"] = []string{strconv.Itoa(q.Limit)}
	}
	if q.Wait > 0 && !stream {
		v["wait_seconds"] = []string{strconv.Itoa(int(q.Wait.Round(time.Second) / time.Second))}
	}
	return v
}

// eventsPath is the events route of project ("": every project, admins).
func eventsPath(project string) string {
	if project == "" {
		return "/v1/events"
	}
	return "/v1/projects/" + esc(project) + "/events"
}

// Events reads project's events after q.After, oldest first (project ""
// reads every project's: admin tokens only). With q.Wait it is a long
// poll: it answers as soon as one matching event exists.
func (c *Client) Events(ctx context.Context, project string, q EventsQuery) (*EventPage, error) {
	var page EventPage
	if _, err := c.do(ctx, http.MethodGet, eventsPath(project), q.values(false), nil, &page, withExtraTimeout(q.Wait)); err != nil {
		return nil, err
	}
	return &page, nil
}

// Stream follows project's events after q.After as they are written
// (project "": every project's, admin tokens only), through the server's
// event stream. It yields each event once, in order; when the connection
// fails or the server restarts it reconnects with Last-Event-ID (waiting
// as the client's retries do), so no event is skipped or repeated,
// whichever replica serves the reconnection. It yields an error and ends
// on a refusal (a bad filter, a revoked token) or when ctx ends; the
// caller may also stop by breaking out of the loop. q.Limit and q.Wait
// are not used.
func (c *Client) Stream(ctx context.Context, project string, q EventsQuery) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		after := q.After
		failures := 0
		for {
			got, err := c.streamOnce(ctx, project, q, &after, func(e Event) bool {
				return yield(e, nil)
			})
			if got < 0 { // the caller stopped
				return
			}
			if got > 0 {
				failures = 0
			}
			if ctx.Err() != nil {
				yield(Event{}, ctx.Err())
				return
			}
			// Transport failures (status 0) are retried while ctx lives.
			if st := statusOf(err); err != nil && st != 0 && !retryable(st, err) {
				yield(Event{}, err)
				return
			}
			failures++
			wait := backoff(min(failures, 10))
			if c.notify != nil && err != nil {
				c.notify(Retry{Method: http.MethodGet, Path: eventsPath(project) + "/stream", Attempt: failures, Err: err, Wait: wait})
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				yield(Event{}, ctx.Err())
				return
			case <-t.C:
			}
		}
	}
}

// statusOf is the HTTP status of an API error (0: none).
func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// streamOnce reads one connection of the stream from *after, handing each
// event to each and moving *after to the stream's position: each event's
// number, and a keep-alive's id (an id with no data: every event the
// filter selects up to there was sent). It returns how many events it
// handed (-1: each asked to stop) and why the connection ended.
func (c *Client) streamOnce(ctx context.Context, project string, q EventsQuery, after *int64, each func(Event) bool) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	path := eventsPath(project) + "/stream"
	u := *c.base
	u.Path = c.base.Path + path
	vals := q.values(true)
	query := u.Query()
	for k, v := range vals {
		query[k] = v
	}
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("client: GET %s: %w", path, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(*after, 10))
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	// The stream has no overall deadline: the client's timeout would end
	// it. A dead connection is noticed by the heartbeats' absence.
	h := *c.http
	h.Timeout = 0
	resp, err := h.Do(req)
	if err != nil {
		return 0, fmt.Errorf("client: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return 0, decodeProblem(http.MethodGet, path, resp.StatusCode, data)
	}
	// No line (event or heartbeat) for this long: the connection is dead.
	idle := time.AfterFunc(streamIdle, cancel)
	defer idle.Stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	var data []byte
	var id int64 = -1
	for sc.Scan() {
		idle.Reset(streamIdle)
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) == 0 {
				// A keep-alive's position.
				if id > *after {
					*after = id
				}
				id = -1
				continue
			}
			id = -1
			var e Event
			if err := json.Unmarshal(data, &e); err != nil {
				return n, fmt.Errorf("client: GET %s: decoding an event: %w", path, err)
			}
			data = data[:0]
			if e.Seq <= *after {
				continue // never twice
			}
			*after = e.Seq
			if !each(e) {
				return -1, nil
			}
			n++
		case strings.HasPrefix(string(line), "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(string(line), "data:"), " ")...)
		case strings.HasPrefix(string(line), "id:"):
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(string(line), "id:")), 10, 64)
			if err != nil {
				v = -1
			}
			id = v
		}
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("client: GET %s: %w", path, err)
	}
	return n, fmt.Errorf("client: GET %s: %w", path, ErrStreamEnded)
}

// ErrStreamEnded is why a connection of Stream ended when the server
// ended it (it shuts down, restarts, or dropped a reader that stopped
// reading): Stream reconnects, and tells the retry with it.
var ErrStreamEnded = errors.New("the server ended the stream")

// streamIdle is how long a stream may stay silent (the server sends a
// heartbeat every 15 s) before the client takes it for dead and
// reconnects.
const streamIdle = 45 * time.Second
