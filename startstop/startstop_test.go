package startstop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// counter is a Service whose loop counts its runs and ticks.
type counter struct {
	Base
	runs  atomic.Int32
	ticks Signal[int]
	ended Signal[struct{}]
}

func (c *counter) Start(ctx context.Context) {
	c.Run(ctx, func(ctx context.Context) {
		c.runs.Add(1)
		n := 0
		Every(ctx, time.Millisecond, true, func(context.Context) { n++; c.ticks.Send(n) })
		c.ended.Send(struct{}{})
	})
}

var _ Service = (*counter)(nil)

func newCounter() *counter {
	c := &counter{}
	c.ticks.Init()
	c.ended.Init()
	return c
}

func TestBase(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		c := newCounter()
		c.Start(context.Background())
		if got := c.ticks.Wait(t); got != 1 {
			t.Fatalf("first tick %d, want the immediate call (1)", got)
		}
		if got := c.ticks.Wait(t); got != 2 {
			t.Fatalf("second tick %d, want 2", got)
		}
		c.Stop()
		select {
		case <-c.ended.ch:
		default:
			t.Fatal("Stop returned before the loop did")
		}
	})
	t.Run("StartTwiceRunsOnce", func(t *testing.T) {
		t.Parallel()
		c := newCounter()
		c.Start(context.Background())
		c.Start(context.Background())
		c.ticks.Wait(t)
		c.Stop()
		if n := c.runs.Load(); n != 1 {
			t.Fatalf("%d loops ran, want 1", n)
		}
	})
	t.Run("StopBeforeStart", func(t *testing.T) {
		t.Parallel()
		c := newCounter()
		c.Stop()
		c.Stop()
		if n := c.runs.Load(); n != 0 {
			t.Fatalf("%d loops ran", n)
		}
	})
	t.Run("Restart", func(t *testing.T) {
		t.Parallel()
		c := newCounter()
		c.Start(context.Background())
		c.ticks.Wait(t)
		c.Stop()
		c.ended.Wait(t)
		c.Start(context.Background())
		c.ticks.Wait(t)
		c.Stop()
		c.ended.Wait(t)
		if n := c.runs.Load(); n != 2 {
			t.Fatalf("%d loops ran, want 2", n)
		}
	})
	t.Run("ContextEnds", func(t *testing.T) {
		t.Parallel()
		c := newCounter()
		ctx, cancel := context.WithCancel(context.Background())
		c.Start(ctx)
		c.ticks.Wait(t)
		cancel()
		c.ended.Wait(t)
		c.Stop()
	})
}

func TestSignalUninitialisedNeverBlocks(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	for i := 0; i < 2*signalBuffer; i++ {
		s.Send(i)
	}
	s.Init()
	for i := 0; i < 2*signalBuffer; i++ {
		s.Send(i) // a full buffer drops
	}
	if got := s.Wait(t); got != 0 {
		t.Fatalf("first signal %d, want 0", got)
	}
}

func TestSignalWithin(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	s.Init()
	if v, ok := s.Within(time.Millisecond); ok {
		t.Fatalf("Within on a quiet signal = %d, true", v)
	}
	s.Send(7)
	if v, ok := s.Within(time.Second); !ok || v != 7 {
		t.Fatalf("Within after Send(7) = %d, %v", v, ok)
	}
	var never Signal[int]
	if _, ok := never.Within(time.Millisecond); ok {
		t.Fatal("Within on a signal that was not initialised reported a value")
	}
}
