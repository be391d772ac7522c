package startstop

import (
	"testing"
	"time"
)

// signalBuffer is how many signals an initialised Signal keeps until a
// test takes them.
const signalBuffer = 100

// signalTimeout bounds Wait: a safety net so that a broken service fails
// its test instead of hanging it, not an assertion on speed.
const signalTimeout = 10 * time.Second

// Signal is one test signal of a service: the service calls Send when
// something happened (a sweep ran, a LISTEN is active); a test that called
// Init before starting the service waits for it with Wait. Until Init,
// Send does nothing, so a production service pays nothing. A full buffer
// drops the signal rather than block the service.
type Signal[T any] struct {
	ch chan T
}

// Init enables the signal. Call it before the service starts.
func (s *Signal[T]) Init() { s.ch = make(chan T, signalBuffer) }

// Send records v for a waiting test; it never blocks.
func (s *Signal[T]) Send(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
	}
}

// Wait returns the next value sent, failing tb if none arrives within
// signalTimeout.
func (s *Signal[T]) Wait(tb testing.TB) T {
	tb.Helper()
	if s.ch == nil {
		tb.Fatal("startstop: Wait on a signal that was not initialised")
	}
	select {
	case v := <-s.ch:
		return v
	case <-time.After(signalTimeout):
		tb.Fatalf("startstop: no signal within %s", signalTimeout)
		var zero T
		return zero
	}
}

// Within returns the next value sent within d, and false when none came:
// for a test that asserts a service stays quiet for a while (d is the
// while), where Wait would fail it.
func (s *Signal[T]) Within(d time.Duration) (T, bool) {
	var zero T
	if s.ch == nil {
		return zero, false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v := <-s.ch:
		return v, true
	case <-t.C:
		return zero, false
	}
}
