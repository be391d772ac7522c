package bodygate

import (
	"context"
	"sync"
	"time"
)

// PerClient bounds the room each client (a key the caller chooses, e.g.
// its address) holds at once: every client has a Gate of its own, of the
// same bound, with the same rules (a body over the bound counts as the
// bound's large share, so one body can always pass alone; the last eighth
// is kept for small bodies). It is taken before a shared Gate, so a client
// that stalls many bodies holds at most its bound of the shared room, and
// its surplus waits and is refused here without queueing beside everyone
// else's requests there.
//
// The table of clients holds only those with room taken or a request
// waiting for it: a client's entry goes away with its last release (or
// refusal), so keys an attacker chooses (addresses behind IPv6) cannot
// make it grow beyond the requests in flight.
type PerClient struct {
	bound int64
	wait  time.Duration
	what  string

	mu sync.Mutex
	m  map[string]*clientGate
}

// clientGate is a client's gate and the requests holding or waiting for
// room in it (its entry goes when they are none).
type clientGate struct {
	gate *Gate
	refs int
}

// NewPerClient returns a PerClient of bound bytes per client whose
// requests wait up to wait for room in their client's gate; what names
// the bodies in refusals ("forms from one address"). Zero or less takes
// New's defaults.
func NewPerClient(what string, bound int64, wait time.Duration) *PerClient {
	g := NewFor(what, bound, wait) // the defaults, once
	return &PerClient{bound: g.Capacity(), wait: g.Wait(), what: what, m: make(map[string]*clientGate)}
}

// Bound is the room one client may hold, in bytes.
func (p *PerClient) Bound() int64 { return p.bound }

// Clients is the number of clients in the table: those holding room or
// waiting for it.
func (p *PerClient) Clients() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// InUse is the room client holds now, in bytes.
func (p *PerClient) InUse(client string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.m[client]; ok {
		return c.gate.InUse()
	}
	return 0
}

// Enter takes room for a body of size bytes in client's gate, as
// Gate.Enter, and returns the function that gives it back (to call once;
// later calls do nothing). A size of 0 or less takes no room and makes no
// entry.
//
// Errors: as Gate.Enter.
func (p *PerClient) Enter(ctx context.Context, client string, size int64) (release func(), err error) {
	if size <= 0 {
		return func() {}, nil
	}
	p.mu.Lock()
	c, ok := p.m[client]
	if !ok {
		c = &clientGate{gate: NewFor(p.what, p.bound, p.wait)}
		p.m[client] = c
	}
	c.refs++
	p.mu.Unlock()

	h, err := c.gate.Take(ctx, size)
	if err != nil {
		p.leave(client, c)
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			h.Release()
			p.leave(client, c)
		})
	}, nil
}

// leave drops a request from client's entry, and the entry with the last.
func (p *PerClient) leave(client string, c *clientGate) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.refs--
	if c.refs == 0 {
		delete(p.m, client)
	}
}
