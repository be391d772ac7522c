package bodygate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/workgraph-dev/workgraph/wgerr"
)

// Defaults of a Gate (New's capacity and wait when zero).
const (
	DefaultCapacity = 64 << 20
	DefaultWait     = 2 * time.Second
)

// SmallBody is the largest body that counts as small: small bodies may use
// the whole capacity, larger ones only what the reserve leaves (see Gate).
// The steps of a lease (claim, heartbeat, complete) send bodies far below it.
const SmallBody = 64 << 10

// Gate bounds the bytes of request bodies this replica reads and decodes
// at once. A request takes room for its declared size (Content-Length; a
// body without one counts as its route's limit until it is read whole:
// Hold.Shrink) before its body is read, and gives it back when its handler
// returns, so a body held by a decoded value counts for as long as it is
// in use. Each body is bounded alone by its route; this bounds their sum.
//
// A request that finds no room waits up to the gate's wait, then is
// refused (429 rate_limited). Room is granted to whichever waiter fits
// when some is given back, not in arrival order, so a small body never
// queues behind a large one. Bodies over SmallBody share at most seven
// eighths of the capacity: the last eighth is kept for small bodies, so
// large uploads that stall (up to the server's body read timeout) cannot
// keep a worker's heartbeat out.
type Gate struct {
	capacity int64
	large    int64 // bound of the room held by bodies over SmallBody
	wait     time.Duration
	// what names the bodies the gate bounds, in its refusals.
	what string

	mu        sync.Mutex
	used      int64
	usedLarge int64
	// freed is closed, and replaced, whenever room is given back: the
	// waiters then try again.
	freed chan struct{}
}

// New returns a gate of capacity bytes whose requests wait up to wait for
// room; zero or less takes DefaultCapacity, DefaultWait.
func New(capacity int64, wait time.Duration) *Gate {
	return NewFor("request bodies", capacity, wait)
}

// NewFor is New for a gate of its own kind of bodies (a route's), named
// by what in its refusals ("plan imports").
func NewFor(what string, capacity int64, wait time.Duration) *Gate {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	if wait <= 0 {
		wait = DefaultWait
	}
	return &Gate{capacity: capacity, large: capacity - capacity/8, wait: wait, what: what, freed: make(chan struct{})}
}

// Capacity is the gate's bound in bytes.
func (g *Gate) Capacity() int64 { return g.capacity }

// Wait is how long a request waits for room before it is refused.
func (g *Gate) Wait() time.Duration { return g.wait }

// InUse is the room held now, in bytes.
func (g *Gate) InUse() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.used
}

// Enter takes room for a body of size bytes (a size over the share of
// large bodies counts as that share, so that one body within its route's
// limit can always pass alone), waiting up to the gate's wait, and returns
// the function that gives it back (to call once; later calls do nothing).
// A size of 0 or less takes no room.
//
// Errors: rate_limited when no room freed up in time; unavailable when ctx
// ended first.
func (g *Gate) Enter(ctx context.Context, size int64) (release func(), err error) {
	h, err := g.Take(ctx, size)
	if err != nil {
		return nil, err
	}
	return h.Release, nil
}

// A Hold is room taken in a Gate, until Release.
type Hold struct {
	g     *Gate
	size  int64
	large bool
	done  bool // released; guarded by g.mu
}

// Take is Enter answering the Hold itself, which can also Shrink.
//
// Errors: as Enter.
func (g *Gate) Take(ctx context.Context, size int64) (*Hold, error) {
	if size <= 0 {
		return &Hold{g: g}, nil
	}
	large := size > SmallBody
	if large {
		size = min(size, g.large)
	}
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	for {
		g.mu.Lock()
		if g.used+size <= g.capacity && (!large || g.usedLarge+size <= g.large) {
			g.used += size
			if large {
				g.usedLarge += size
			}
			g.mu.Unlock()
			return &Hold{g: g, size: size, large: large}, nil
		}
		freed := g.freed
		g.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			return nil, wgerr.New(wgerr.CodeRateLimited,
				"too many %s are being read on this replica (at most %s at once); retry after 1 s", g.what, mib(g.capacity))
		case <-ctx.Done():
			return nil, wgerr.New(wgerr.CodeUnavailable, "the request ended while waiting to read its body")
		}
	}
}

// Release gives the hold's room back; a second call does nothing.
func (h *Hold) Release() {
	h.g.mu.Lock()
	defer h.g.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	if h.size > 0 {
		h.give(h.size)
	}
}

// Shrink gives back all of the hold's room but n bytes: a body read whole
// that is smaller than the room it took (one sent without a length takes
// its route's limit) keeps only its size for the rest of its request, a
// long poll's included. It never grows a hold.
func (h *Hold) Shrink(n int64) {
	h.g.mu.Lock()
	defer h.g.mu.Unlock()
	n = max(n, 0)
	if h.done || n >= h.size {
		return
	}
	h.give(h.size - n)
	h.size = n
	if h.large && n <= SmallBody {
		h.g.usedLarge -= n // the rest of it counts as small from now on
		h.large = false
	}
}

// give takes n bytes off the hold's count in the gate and wakes the
// waiters; the caller holds g.mu.
func (h *Hold) give(n int64) {
	g := h.g
	g.used -= n
	if h.large {
		g.usedLarge -= n
	}
	close(g.freed)
	g.freed = make(chan struct{})
}

// mib writes a size as the documents give it: "64 MiB (67108864 bytes)".
func mib(n int64) string {
	return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
}
