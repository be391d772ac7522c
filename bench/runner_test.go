package main

import (
	"context"
	"testing"
	"time"
)

// TestLoopMinOps: an operation slower than the whole window is not counted
// in a fixed window, and is in a smoke run's (minOps), whose window stays
// open until it finished. The smoke test failed with "no operations
// measured" on a loaded machine for want of this.
func TestLoopMinOps(t *testing.T) {
	t.Parallel()
	slow := func(ctx context.Context, _ int, rec *recorder) error {
		start := time.Now()
		select {
		case <-time.After(20 * time.Millisecond): // longer than the window
		case <-ctx.Done():
			return ctx.Err()
		}
		rec.observe("op", start)
		rec.done()
		return nil
	}
	t.Run("FixedWindow", func(t *testing.T) {
		t.Parallel()
		rec := loop{workers: 1, duration: time.Millisecond, iter: slow}.run(context.Background())
		if rec.ops != 0 {
			t.Fatalf("%d operations counted in a window shorter than one", rec.ops)
		}
	})
	t.Run("Smoke", func(t *testing.T) {
		t.Parallel()
		rec := loop{workers: 2, duration: time.Millisecond, iter: slow, minOps: 1}.run(context.Background())
		if rec.ops < 1 || rec.lat["op"] == nil {
			t.Fatalf("%d operations counted, latencies %v; want at least 1", rec.ops, rec.lat)
		}
		if rec.seconds < 0.02 {
			t.Fatalf("measured %.3fs, want the time the window really stayed open (>= 20ms)", rec.seconds)
		}
	})
}
