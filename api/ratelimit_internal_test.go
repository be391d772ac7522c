package api

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"
)

// TestRateLimitDefault: a server configured with nothing limits each token
// to DefaultRateBurst requests at once, refilled at DefaultRateLimit a
// second, judged on a fixed instant so that no machine's speed matters
// (acceptance TestRateLimit checks the 429 itself, on a bucket of its
// own); a negative limit turns it off.
func TestRateLimitDefault(t *testing.T) {
	t.Parallel()
	a := New(Config{})
	if a.limits.limit != DefaultRateLimit || a.limits.burst != DefaultRateBurst {
		t.Fatalf("default limit %v, burst %d; want %v, %d", a.limits.limit, a.limits.burst, DefaultRateLimit, DefaultRateBurst)
	}
	t0 := time.Now()
	lim := a.limits.get(uuid.New())
	if !lim.AllowN(t0, DefaultRateBurst) {
		t.Fatalf("a fresh token cannot send %d requests at once", DefaultRateBurst)
	}
	if lim.AllowN(t0, 1) {
		t.Fatalf("request %d at the same instant was allowed", DefaultRateBurst+1)
	}
	if !lim.AllowN(t0.Add(time.Second), DefaultRateLimit) || lim.AllowN(t0.Add(time.Second), 1) {
		t.Fatalf("a second later the bucket does not hold exactly %d requests", DefaultRateLimit)
	}
	if other := a.limits.get(uuid.New()); !other.AllowN(t0, 1) {
		t.Fatalf("another token's bucket was emptied by the first's requests")
	}
	if off := New(Config{RateLimit: -1}); off.limits.limit != rate.Inf {
		t.Fatalf("RateLimit -1: limit %v, want unlimited", off.limits.limit)
	}
}
