package startstop

import (
	"context"
	"sync"
	"time"
)

// Service is a background loop: Start runs it until Stop or until the
// context ends; Stop waits for it to return. Both may be called more than
// once; Stop before Start does nothing.
type Service interface {
	Start(ctx context.Context)
	Stop()
}

// Base does the bookkeeping of a Service: at most one running goroutine, a
// context cancelled by Stop, and Stop waiting for the goroutine to return.
// The zero value is ready to use; a Base must not be copied after use.
type Base struct {
	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// Run starts loop in a goroutine with a context derived from ctx that Stop
// cancels. A second Run while the first has not been stopped does
// nothing; after Stop, the service may be started again.
func (b *Base) Run(ctx context.Context, loop func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	b.started, b.cancel, b.done = true, cancel, done
	go func() {
		defer close(done)
		loop(ctx)
	}()
}

// Stop cancels the loop's context and waits for the loop to return.
func (b *Base) Stop() {
	b.mu.Lock()
	if !b.started {
		b.mu.Unlock()
		return
	}
	cancel, done := b.cancel, b.done
	b.mu.Unlock()
	cancel()
	<-done
	b.mu.Lock()
	if b.done == done {
		b.started = false
	}
	b.mu.Unlock()
}

// Every calls fn every interval until ctx ends, first at once when
// immediately is set. A call in progress is not interrupted except through
// its ctx; ticks missed while fn runs are dropped.
func Every(ctx context.Context, interval time.Duration, immediately bool, fn func(ctx context.Context)) {
	if immediately {
		fn(ctx)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() != nil {
			return
		}
		fn(ctx)
	}
}
