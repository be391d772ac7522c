package bodygate_test

import (
	"context"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/bodygate"
	"github.com/workgraph-dev/workgraph/wgerr"
)

func TestGate(t *testing.T) {
	t.Parallel()
	const capacity = 8 << 20 // bodies over SmallBody share 7 MiB

	t.Run("ErrLargeBeyondItsShare", func(t *testing.T) {
		t.Parallel()
		g := bodygate.New(capacity, 10*time.Millisecond)
		release := mustEnter(t, g, 7<<20)
		defer release()
		if _, err := g.Enter(context.Background(), 1<<20); wgerr.CodeOf(err) != wgerr.CodeRateLimited {
			t.Fatalf("a large body beyond the large share: %v, want rate_limited", err)
		}
	})
	t.Run("SmallBodiesKeepTheirReserve", func(t *testing.T) {
		t.Parallel()
		g := bodygate.New(capacity, 10*time.Millisecond)
		release := mustEnter(t, g, 7<<20)
		defer release()
		for range 16 { // the whole reserve, 1 MiB, in small bodies
			defer mustEnter(t, g, bodygate.SmallBody)()
		}
		if g.InUse() != capacity {
			t.Fatalf("in use %d, want the whole capacity %d", g.InUse(), capacity)
		}
		if _, err := g.Enter(context.Background(), 1); wgerr.CodeOf(err) != wgerr.CodeRateLimited {
			t.Fatalf("a body beyond the capacity: %v, want rate_limited", err)
		}
	})
	t.Run("SmallPassesAWaitingLargeOne", func(t *testing.T) {
		t.Parallel()
		g := bodygate.New(capacity, time.Minute)
		release := mustEnter(t, g, 6<<20)
		waited := make(chan error, 1)
		go func() {
			r, err := g.Enter(context.Background(), 2<<20) // waits for room
			if err == nil {
				r()
			}
			waited <- err
		}()
		// The large one waits; a small one is not queued behind it.
		mustEnter(t, g, 1024)()
		release()
		if err := <-waited; err != nil {
			t.Fatalf("the waiting large body once room came back: %v", err)
		}
		if g.InUse() != 0 {
			t.Fatalf("in use %d after every release, want 0", g.InUse())
		}
	})
	t.Run("ErrContextEnded", func(t *testing.T) {
		t.Parallel()
		g := bodygate.New(capacity, time.Minute)
		defer mustEnter(t, g, 7<<20)()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := g.Enter(ctx, 1<<20); wgerr.CodeOf(err) != wgerr.CodeUnavailable {
			t.Fatalf("a wait whose request ended: %v, want unavailable", err)
		}
	})
	t.Run("ShrinkFreesTheLargeShare", func(t *testing.T) {
		t.Parallel()
		g := bodygate.New(capacity, 10*time.Millisecond)
		h, err := g.Take(context.Background(), 7<<20)
		if err != nil {
			t.Fatal(err)
		}
		h.Shrink(100) // read whole, the body was 100 bytes
		if g.InUse() != 100 {
			t.Fatalf("in use %d after shrinking to 100, want 100", g.InUse())
		}
		// The large share is free again: its 7 MiB fit beside the small rest.
		defer mustEnter(t, g, 7<<20)()
		h.Shrink(1000) // never grows
		h.Release()
		h.Release()
		if g.InUse() != 7<<20 {
			t.Fatalf("in use %d, want the other body's %d", g.InUse(), 7<<20)
		}
	})
	t.Run("OversizedCountsAsTheShare", func(t *testing.T) {
		t.Parallel()
		g := bodygate.New(capacity, 10*time.Millisecond)
		release := mustEnter(t, g, 16<<20)
		if g.InUse() != 7<<20 {
			t.Fatalf("in use %d, want the large share %d", g.InUse(), 7<<20)
		}
		release()
		release() // a second call gives nothing back twice
		if g.InUse() != 0 {
			t.Fatalf("in use %d, want 0", g.InUse())
		}
	})
}

func mustEnter(t *testing.T, g *bodygate.Gate, size int64) func() {
	t.Helper()
	release, err := g.Enter(context.Background(), size)
	if err != nil {
		t.Fatalf("enter %d bytes: %v", size, err)
	}
	return release
}
