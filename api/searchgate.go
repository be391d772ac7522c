package api

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// Defaults of the search gate (Config.SearchConcurrency, Config.SearchWait).
const (
	DefaultSearchConcurrency = 4
	DefaultSearchWait        = 2 * time.Second
)

// searchGate bounds the expensive reads (item lists filtered by text in
// titles or bodies: trigram indexes answer texts of 3 or more characters,
// shorter ones and very common ones scan the project's items) that one project may run at once on this
// replica, so that one project's searches cannot hold every database
// connection while other projects wait. A search beyond the bound waits up
// to wait for a slot, then is refused with 429 rate_limited and Retry-After.
type searchGate struct {
	per  int
	wait time.Duration
	mu   sync.Mutex
	// slots holds a semaphore per project while any of its searches runs.
	slots map[uuid.UUID]*projectSlots
}

type projectSlots struct {
	sem   chan struct{}
	users int // searches running or waiting; the entry is dropped at 0
}

func newSearchGate(per int, wait time.Duration) *searchGate {
	if per <= 0 {
		per = DefaultSearchConcurrency
	}
	if wait <= 0 {
		wait = DefaultSearchWait
	}
	return &searchGate{per: per, wait: wait, slots: make(map[uuid.UUID]*projectSlots)}
}

// enter takes one of project's slots, waiting up to g.wait, and returns the
// function that gives it back.
//
// Errors: rate_limited when no slot freed up in time; unavailable when ctx
// ended first.
func (g *searchGate) enter(ctx context.Context, project uuid.UUID) (release func(), err error) {
	g.mu.Lock()
	s, ok := g.slots[project]
	if !ok {
		s = &projectSlots{sem: make(chan struct{}, g.per)}
		g.slots[project] = s
	}
	s.users++
	g.mu.Unlock()
	leave := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if s.users--; s.users == 0 {
			delete(g.slots, project)
		}
	}
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem; leave() }, nil
	case <-timer.C:
		leave()
		return nil, wgerr.New(wgerr.CodeRateLimited,
			"too many searches are running in this project (at most %d at once); retry after 1 s", g.per)
	case <-ctx.Done():
		leave()
		return nil, wgerr.New(wgerr.CodeUnavailable, "the request ended while waiting for a search slot")
	}
}
