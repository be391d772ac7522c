package mcp

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// session is the state of one MCP session: the lease it holds, if any.
// Invariant: a session holds at most one lease, and a lease held by the
// session has a running heartbeat until it is dropped or lost.
type session struct {
	srv *Server
	id  string

	// ops serializes the session's calls that present or take a lease
	// (tool calls and background heartbeats), so that they never race on
	// the lease.
	ops sync.Mutex

	mu    sync.Mutex
	held  *held
	ended bool

	// why is take_task's last explanation of an empty claim, for the
	// labels and capabilities whyFor, read at whyAt (guarded by ops): an
	// agent polling take_task reads the project's items for it at most
	// once per whyEvery; a granted task forgets it.
	why    []string
	whyFor string
	whyAt  time.Time
}

// whyEvery is how long take_task reuses its explanation of an empty claim.
const whyEvery = 30 * time.Second

// held is a lease the session holds.
type held struct {
	fence  fence
	taskID string
	ttl    time.Duration
	quit   chan struct{} // closed when the session lets go of the lease
	// Guarded by session.mu:
	lost          bool            // a background heartbeat was refused
	lostWhy       string          // what the refusal said ended the lease ("" when it did not say)
	stopRequested bool            // a person asked the worker to stop
	stopNote      string          // why, if they said
	answers       []question      // answers not yet shown to the agent
	shown         map[string]bool // attention ids whose answer was shown
}

// defaultTTL is assumed when the server's answer does not say.
const defaultTTL = 15 * time.Minute

// current returns the session's lease, or nil.
func (s *session) current() *held {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// hold makes c the session's lease and starts its heartbeat. It reports
// false, and holds nothing, when the session has already ended.
func (s *session) hold(c *claim) bool {
	ttl := c.ExpiresAt.Sub(c.AcquiredAt)
	if ttl <= 0 {
		ttl = defaultTTL
	}
	h := &held{fence: c.Fence, taskID: c.Task.ID, ttl: ttl, quit: make(chan struct{}), shown: map[string]bool{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.held = h
	go s.heartbeat(h)
	return true
}

// drop forgets h (if it is still the session's lease) and stops its
// heartbeat.
func (s *session) drop(h *held) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == h {
		s.held = nil
		close(h.quit)
	}
}

// end is called once when the MCP session ends: a lease still held is
// released so that its task goes back into circulation at once.
func (s *session) end() {
	s.ops.Lock()
	defer s.ops.Unlock()
	s.mu.Lock()
	s.ended = true
	h := s.held
	s.mu.Unlock()
	if h == nil {
		return
	}
	s.drop(h)
	if h.isLost(s) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv.api.Release(ctx, h.fence, "MCP session ended"); err != nil {
		s.srv.log.Warn("releasing the task of an ended MCP session", "task", h.taskID, "err", err)
	}
}

func (h *held) isLost(s *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return h.lost
}

// heartbeat keeps h alive at a third of its TTL until the session lets go
// of it or the server refuses it. Transient failures are retried at the
// next tick; two in a row still leave a third of the TTL.
func (s *session) heartbeat(h *held) {
	every := max(h.ttl/3, 50*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-h.quit:
			return
		case <-tick.C:
		}
		if s.srv.heartbeatPaused.Load() {
			continue
		}
		if done := s.beat(h, max(h.ttl, time.Second)); done {
			return
		}
	}
}

// beat sends one background heartbeat for h and reports whether the
// heartbeat loop should stop.
func (s *session) beat(h *held, timeout time.Duration) bool {
	s.ops.Lock()
	defer s.ops.Unlock()
	if s.current() != h {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b, err := s.srv.api.Heartbeat(ctx, h.fence, "", nil)
	switch {
	case errors.Is(err, client.ErrLeaseLost):
		s.mu.Lock()
		h.lost, h.lostWhy = true, lostWhy(err)
		s.mu.Unlock()
		s.srv.log.Warn("lease lost", "task", h.taskID, "session", s.id)
		return true
	case err != nil:
		s.srv.log.Warn("heartbeat failed; retrying", "task", h.taskID, "err", err)
		return false
	}
	s.note(h, b)
	return false
}

// note keeps what a heartbeat answered until the agent is shown it.
func (s *session) note(h *held, b *beat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.stopRequested = h.stopRequested || b.StopRequested
	if b.StopNote != "" {
		h.stopNote = b.StopNote
	}
	for _, a := range b.Answers {
		if h.shown[a.ID] {
			continue
		}
		h.shown[a.ID] = true
		h.answers = append(h.answers, a)
	}
}

// news returns, once, the answers that arrived for h, and whether a person
// asked to stop, with the reason they gave.
func (s *session) news(h *held) (answers []question, stop bool, note string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	answers, h.answers = h.answers, nil
	return answers, h.stopRequested, h.stopNote
}

// lostWarning is a note for the agent when the background heartbeat found
// the session's lease lost, so that an agent busy with other tools hears of
// it before it reports on the task.
func (s *session) lostWarning() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil || !s.held.lost {
		return ""
	}
	return "Warning: " + (&leaseLostError{taskID: s.held.taskID, why: s.held.lostWhy}).Error()
}

// errNoTask answers a worker tool called without a task.
var errNoTask = wgerr.New(wgerr.CodeInvalid, "you hold no task: call take_task first")

// leaseLostError is the tool error for a refused fence.
type leaseLostError struct {
	taskID string
	why    string // what ended the lease (lostWhy); "" when the server did not say
}

func (e *leaseLostError) Error() string {
	why := e.why
	if why == "" {
		why = "its lease expired or another worker took it over"
	}
	return "lease lost: task " + e.taskID + " is no longer yours (" + why + "). " +
		"Stop working on it and do not report on it again; call take_task for your next task."
}

// lostWhy says, from the server's lease_lost refusal err, what ended the
// lease: the outcome it names, or an epoch the lease was not granted at;
// "" when it says neither.
func lostWhy(err error) string {
	var ce *client.Error
	if !errors.As(err, &ce) {
		return ""
	}
	var outcome string
	ce.Extension("outcome", &outcome)
	switch {
	case outcome == string(client.OutcomeCancelled):
		return "a person cancelled it"
	case outcome == string(client.OutcomeExpired), outcome == "" && strings.HasSuffix(ce.Detail, " has expired"):
		return "its lease expired: no report or heartbeat arrived in time, so another worker may hold it now"
	case outcome != "":
		return "its lease has ended (" + strings.ReplaceAll(outcome, "_", " ") + ")"
	case strings.HasSuffix(ce.Detail, " was not granted at this epoch"):
		// A lease keeps its claim's epoch (a later claim is a new lease),
		// and the session sent its claim's: nobody took the item over.
		return "the server refused its lease at the epoch its claim gave, as of a different claim; nothing was changed, and the lease runs out by itself"
	}
	return ""
}

// worker runs call with the session's lease. It refuses when the session
// holds no task. The session forgets the lease when the server refuses the
// fence, and when the call succeeded and ends the lease (ends).
func (s *session) worker(ends bool, call func(h *held) error) (*held, error) {
	s.ops.Lock()
	defer s.ops.Unlock()
	h := s.current()
	if h == nil {
		return nil, errNoTask
	}
	err := call(h)
	switch {
	case errors.Is(err, client.ErrLeaseLost):
		s.drop(h)
		return h, &leaseLostError{taskID: h.taskID, why: lostWhy(err)}
	case errors.Is(err, client.ErrConflictingResult):
		// The task was already completed with another result: the lease
		// has ended either way.
		s.drop(h)
		return h, err
	case err != nil:
		return h, err
	}
	if ends {
		s.drop(h)
	}
	return h, nil
}
