package auth_test

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/auth"
)

// localStub is a process clock a test moves.
type localStub struct {
	mu  sync.Mutex
	now time.Time
}

func (s *localStub) read() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *localStub) advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

// TestThrottleClock: the throttle's buckets run on its injected clock, so
// a test moves time instead of sleeping, and the refill is exact.
func TestThrottleClock(t *testing.T) {
	t.Parallel()
	clk := &localStub{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	th := auth.NewThrottle(1, 3, nil)
	th.SetClock(clk.read)
	const addr = "192.0.2.1"
	for range 3 {
		if _, blocked := th.Blocked(addr); blocked {
			t.Fatal("blocked inside the burst")
		}
		th.Fail(addr)
	}
	wait, blocked := th.Blocked(addr)
	if !blocked || wait != time.Second {
		t.Fatalf("after the burst: blocked %v, retry after %s; want blocked for 1s", blocked, wait)
	}
	clk.advance(999 * time.Millisecond)
	if _, blocked := th.Blocked(addr); !blocked {
		t.Fatal("unblocked before a token refilled")
	}
	clk.advance(time.Millisecond)
	if _, blocked := th.Blocked(addr); blocked {
		t.Fatal("still blocked once a token refilled")
	}
	if _, blocked := th.Blocked("192.0.2.2"); blocked {
		t.Fatal("another address is blocked")
	}
}

// TestThrottleKeepsTheBlockedWhenFull: once the throttle tracks as many
// addresses as it may, it forgets the least blocked ones to make room, so
// failures from many other addresses (a host spreading over a /48's /64s)
// cannot unblock the address that is flooding. It used to forget them all.
func TestThrottleKeepsTheBlockedWhenFull(t *testing.T) {
	t.Parallel()
	clk := &localStub{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	th := auth.NewThrottle(1, 3, slog.New(slog.DiscardHandler))
	th.SetClock(clk.read)
	const flooder = "198.51.100.7"
	for range 3 {
		th.Fail(flooder)
	}
	if _, blocked := th.Blocked(flooder); !blocked {
		t.Fatal("the flooder is not blocked after its burst")
	}
	// One failure each from as many other addresses as the throttle
	// tracks: each of them still has tokens left.
	for i := range auth.ThrottleMax {
		th.Fail(fmt.Sprintf("2001:db8:%x:%x::", i>>16, i&0xffff))
	}
	if _, blocked := th.Blocked(flooder); !blocked {
		t.Fatal("failures from other addresses unblocked the flooder")
	}
}
