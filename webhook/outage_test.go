package webhook_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/db/dbtest"
	"github.com/workgraph-dev/workgraph/webhook"
)

// lockedBuffer is a log destination the loop and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDeliveryBacksOffWhileTheDatabaseIsDown: a delivery loop whose
// database is unreachable waits longer after each failed round (doubling
// from Poll, up to a few seconds) instead of retrying, and logging an
// error, every Poll: with the default 50 ms, a database outage gave 20
// error lines and 20 connection attempts a second per replica.
func TestDeliveryBacksOffWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	pool := dbtest.Unreachable(t) // every statement fails at connect

	const poll = 20 * time.Millisecond
	var logs lockedBuffer
	d := webhook.NewDeliverer(pool, webhook.DelivererConfig{
		Poll: poll, Clock: clock.Database{}, Log: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	d.TestSignals.Round.Init()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Start(ctx)
	defer d.Stop()

	const rounds = 6
	var start time.Time
	for i := range rounds {
		r := d.TestSignals.Round.Wait(t)
		if r.Err == nil {
			t.Fatalf("round %d against a database that is down succeeded", i)
		}
		if i == 0 {
			start = time.Now()
		}
	}
	// The waits after rounds 1 to 5 are at least 2, 4, 8, 16 and 32
	// polls (62); a loop that kept its pace took 5.
	if took, want := time.Since(start), 30*poll; took < want {
		t.Errorf("rounds 1 to %d took %s, want at least %s: the loop does not back off", rounds, took, want)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n > rounds+1 {
		t.Errorf("%d error lines for %d failed rounds", n, rounds)
	}
}
