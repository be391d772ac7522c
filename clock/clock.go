// Package clock is the seam through which time reaches workgraph's domain
// code.
//
// Lease expiry and every other time-dependent decision is made by the
// database clock: queries take an optional "now" parameter and fall back to
// the database's now() when it is NULL (the pattern of
// `coalesce(sqlc.narg('now'), now())`). In production a Clock returns nil, so
// the database decides; tests install a Stub to move time without sleeping.
// Domain packages never call time.Now themselves.
package clock

import (
	"strings"
	"sync"
	"time"
)

// Clock tells queries which instant to treat as now. A nil result means "the
// database's own now()".
type Clock interface {
	Now() *time.Time
}

// Database is the production clock: it defers every decision to the
// database server's now().
type Database struct{}

// Now returns nil: the database decides.
func (Database) Now() *time.Time { return nil }

// Stub is a settable clock for tests. The zero Stub behaves like Database
// until Set is called.
type Stub struct {
	mu  sync.Mutex
	now *time.Time
}

// NewStub returns a stub clock frozen at t.
func NewStub(t time.Time) *Stub {
	s := &Stub{}
	s.Set(t)
	return s
}

// Now returns the stubbed instant, or nil when unset.
func (s *Stub) Now() *time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now == nil {
		return nil
	}
	t := *s.now
	return &t
}

// Set freezes the clock at t.
func (s *Stub) Set(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t = t.UTC()
	s.now = &t
}

// Advance moves a set clock forward by d. It panics on an unset clock.
func (s *Stub) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now == nil {
		panic("clock: Advance on an unset Stub")
	}
	t := s.now.Add(d)
	s.now = &t
}

// Local is the process's own clock, for what only this process measures
// and no other replica must agree on: rate-limit buckets, the pacing of
// log lines, the "waited for" a page displays. It never judges a lease or
// any other decision the database makes. A nil Local reads System.
type Local func() time.Time

// System is the machine's wall clock: the one place outside tests that
// reads it.
func System() time.Time { return time.Now() }

// Read returns the time of l, or the system's when l is nil.
func (l Local) Read() time.Time {
	if l == nil {
		return System()
	}
	return l()
}

// Typed writes d, rounded to the second, as a person types it and
// time.ParseDuration reads it: 4h, 1h30m, 45m, 45s (not 4h0m0s). The web
// UI's budget form and the CLI's budget line show a wall-time limit so.
func Typed(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
