package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestLateStall: a late holder stalls either just past its lease (its
// report races the expiry: the fence's expires_at predicate must refuse
// it) or past twice its lease, as issue 13's paused lease holder (the item
// has usually been claimed again by then: the epoch must refuse it). Both
// kinds occur.
func TestLateStall(t *testing.T) {
	t.Parallel()
	ttl := 2 * time.Second
	rng := rand.New(rand.NewPCG(1, 2))
	short, long := 0, 0
	for range 200 {
		d := lateStall(rng, ttl)
		switch {
		case d > 2*ttl:
			long++
		case d > ttl && d < ttl+time.Second:
			short++
		default:
			t.Fatalf("a stall of %s for a lease of %s: neither just past it nor past twice it", d, ttl)
		}
	}
	if short == 0 || long == 0 {
		t.Fatalf("%d stalls just past the lease, %d past twice it: want both", short, long)
	}
}
